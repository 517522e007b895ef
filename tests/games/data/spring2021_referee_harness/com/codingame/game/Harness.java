package com.codingame.game;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;

import com.codingame.gameengine.core.MultiplayerGameManager;

/**
 * Plays seeded games on the official referee's Game class (compiled beside these stand-ins) and
 * prints them as JSON: the map, every ACTIONS frame (the position the players see, then the
 * commands they sent) and the final scores. Commands: mostly uniform over the referee's own list
 * of possible moves, sometimes a random well-formed command that may break the rules.
 *
 * Usage: java -cp out com.codingame.game.Harness SEED...         (games)
 *        java -cp out com.codingame.game.Harness --maps SEED...  (start positions only)
 */
public class Harness {

    public static void main(String[] args) throws Exception {
        StringBuilder out = new StringBuilder("[\n");
        boolean maps = args.length > 0 && args[0].equals("--maps");
        for (int i = maps ? 1 : 0; i < args.length; i++) {
            out.append(play(Long.parseLong(args[i]), maps));
            out.append(i + 1 < args.length ? ",\n" : "\n");
        }
        System.out.print(out.append("]\n"));
    }

    static void inject(Object target, String name, Object value) throws Exception {
        Field field = target.getClass().getDeclaredField(name);
        field.setAccessible(true);
        field.set(target, value);
    }

    static String play(long seed, boolean mapOnly) throws Exception {
        List<Player> players = new ArrayList<>(List.of(new Player(), new Player()));
        MultiplayerGameManager<Player> manager = new MultiplayerGameManager<>(players);
        GameSummaryManager summaries = new GameSummaryManager();
        Game game = new Game();
        inject(game, "gameManager", manager);
        inject(game, "gameSummaryManager", summaries);
        CommandManager commands = new CommandManager();
        inject(commands, "gameSummaryManager", summaries);
        Method possible = Game.class.getDeclaredMethod("getPossibleMoves", Player.class);
        possible.setAccessible(true);
        Random chooser = new Random(seed * 31 + 7);

        game.init(seed);
        StringBuilder json = new StringBuilder("{\"seed\": " + seed + ", \"richness\": [");
        for (int index = 0; index < game.board.coords.size(); index++) {
            json.append(index > 0 ? ", " : "").append(game.board.map.get(game.board.coords.get(index)).getRichness());
        }
        json.append("]");
        if (mapOnly) {
            return json.append(", \"start\": ").append(snapshot(game, players)).append("}").toString();
        }
        json.append(", \"frames\": [");
        boolean firstFrame = true;
        while (!manager.ended) {
            game.resetGameTurnData();
            if (game.getCurrentFrameType() == FrameType.ACTIONS) {
                json.append(firstFrame ? "\n" : ",\n").append("{\"seen\": ").append(snapshot(game, players));
                firstFrame = false;
                json.append(", \"commands\": [");
                for (Player player : players) {
                    String command = null;
                    if (!player.isWaiting()) {
                        @SuppressWarnings("unchecked")
                        List<String> moves = (List<String>) possible.invoke(game, player);
                        command = chooser.nextDouble() < 0.85 ? moves.get(chooser.nextInt(moves.size())) : wild(chooser);
                        commands.parseCommands(player, List.of(command), game);
                    }
                    json.append(player.getIndex() > 0 ? ", " : "").append(command == null ? "null" : "\"" + command + "\"");
                }
                json.append("]}");
            }
            game.performGameUpdate();
        }
        json.append("],\n\"end\": ").append(snapshot(game, players));
        game.onEnd();
        json.append(", \"final_scores\": [").append(players.get(0).getScore()).append(", ")
            .append(players.get(1).getScore()).append("]}");
        return json.toString();
    }

    /** A well-formed command on random cells (0..39, so some do not exist): it may break the rules. */
    static String wild(Random chooser) {
        int a = chooser.nextInt(40), b = chooser.nextInt(40);
        switch (chooser.nextInt(3)) {
        case 0:
            return "GROW " + a;
        case 1:
            return "COMPLETE " + a;
        default:
            return "SEED " + a + " " + b;
        }
    }

    static String snapshot(Game game, List<Player> players) {
        StringBuilder json = new StringBuilder("{\"day\": " + game.getRound() + ", \"nutrients\": " + game.getNutrients());
        json.append(", \"sun\": [").append(players.get(0).getSun()).append(", ").append(players.get(1).getSun()).append("]");
        json.append(", \"score\": [").append(players.get(0).getScore()).append(", ").append(players.get(1).getScore()).append("]");
        json.append(", \"waiting\": [").append(players.get(0).isWaiting()).append(", ").append(players.get(1).isWaiting()).append("]");
        json.append(", \"trees\": [");
        boolean first = true;
        for (Map.Entry<Integer, Tree> entry : game.getTrees().entrySet()) {
            Tree tree = entry.getValue();
            json.append(first ? "" : ", ").append("[").append(entry.getKey()).append(", ").append(tree.getSize())
                .append(", ").append(tree.getOwner().getIndex()).append(", ").append(tree.isDormant() ? 1 : 0).append("]");
            first = false;
        }
        return json.append("]}").toString();
    }
}
