package com.google.inject;

/** Stand-in for Guice's annotation. */
public @interface Singleton {
}
