package com.codingame.gameengine.core;

/** Stand-in for the SDK's game manager: only the static helper the summaries use. */
public class GameManager {
    public static String formatErrorMessage(String message) {
        return message;
    }
}
