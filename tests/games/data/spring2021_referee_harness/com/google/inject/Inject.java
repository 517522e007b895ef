package com.google.inject;

import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;

/** Stand-in for Guice's annotation: the harness injects fields by reflection. */
@Retention(RetentionPolicy.RUNTIME)
public @interface Inject {
}
