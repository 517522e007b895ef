package com.codingame.view;

import java.util.Arrays;
import java.util.stream.Collectors;

/** Stand-in for the view module's joiner (only used by toString). */
public class Serializer {
    public static String join(Object... parts) {
        return Arrays.stream(parts).map(String::valueOf).collect(Collectors.joining(" "));
    }
}
