package com.codingame.gameengine.core;

/** Stand-in for the SDK's player: an index, a score and an active flag. */
public abstract class AbstractMultiplayerPlayer {
    private int index;
    private int score;
    private boolean active = true;

    public void setIndex(int index) {
        this.index = index;
    }

    public int getIndex() {
        return index;
    }

    public int getScore() {
        return score;
    }

    public void setScore(int score) {
        this.score = score;
    }

    public boolean isActive() {
        return active;
    }

    public void deactivate(String reason) {
        active = false;
    }

    public String getNicknameToken() {
        return "$" + index;
    }

    public abstract int getExpectedOutputLines();
}
