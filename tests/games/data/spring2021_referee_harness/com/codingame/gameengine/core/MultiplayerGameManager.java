package com.codingame.gameengine.core;

import java.util.List;
import java.util.stream.Collectors;

/** Stand-in for the SDK's manager: two players, the final league, and an end flag. */
public class MultiplayerGameManager<T extends AbstractMultiplayerPlayer> {
    private final List<T> players;
    public boolean ended = false;

    public MultiplayerGameManager(List<T> players) {
        this.players = players;
        for (int i = 0; i < players.size(); i++) {
            players.get(i).setIndex(i);
        }
    }

    public int getLeagueLevel() {
        return 3;
    }

    public List<T> getPlayers() {
        return players;
    }

    public T getPlayer(int index) {
        return players.get(index);
    }

    public int getPlayerCount() {
        return players.size();
    }

    public List<T> getActivePlayers() {
        return players.stream().filter(AbstractMultiplayerPlayer::isActive).collect(Collectors.toList());
    }

    public void addTooltip(T player, String text) {
    }

    public void setFrameDuration(int duration) {
    }

    public void addToGameSummary(String summary) {
    }

    public void setMaxTurns(int turns) {
    }

    public void endGame() {
        ended = true;
    }
}
