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
 * of possible moves, sometimes a random well-formed command that may break the rules. With
 * --malformed, one or both players send a malformed line on one frame (the referee deactivates its
 * author and the game ends).
 *
 * Usage: java -cp out com.codingame.game.Harness SEED...              (games)
 *        java -cp out com.codingame.game.Harness --maps SEED...       (start positions only)
 *        java -cp out com.codingame.game.Harness --malformed SEED...  (games ended by a malformed line)
 */
public class Harness {

    /** Lines that match no command pattern, or match one whose number overflows an int. */
    static final String[] MALFORMED = {
        "", "WAITx", "GROW 3x", "GROW -1", "GROW 99999999999", "SEED 1 99999999999", " GROW 3", "GROW  3",
        "grow 3", "SEED 1", "COMPLETE", "MOVE 3", "GROW\t3", "WAIT\u00a0hi", "GROW \u0663",
    };

    public static void main(String[] args) throws Exception {
        StringBuilder out = new StringBuilder("[\n");
        String mode = args.length > 0 && args[0].startsWith("--") ? args[0] : "";
        for (int i = mode.isEmpty() ? 0 : 1; i < args.length; i++) {
            out.append(play(Long.parseLong(args[i]), mode.equals("--maps"), mode.equals("--malformed")));
            out.append(i + 1 < args.length ? ",\n" : "\n");
        }
        System.out.print(out.append("]\n"));
    }

    static void inject(Object target, String name, Object value) throws Exception {
        Field field = target.getClass().getDeclaredField(name);
        field.setAccessible(true);
        field.set(target, value);
    }

    static String play(long seed, boolean mapOnly, boolean malformed) throws Exception {
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
        Strike strike = malformed ? new Strike(new Random(seed * 17 + 3)) : null;

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
                boolean striking = strike != null && strike.due(game, players);
                for (Player player : players) {
                    String command = null;
                    if (!player.isWaiting()) {
                        @SuppressWarnings("unchecked")
                        List<String> moves = (List<String>) possible.invoke(game, player);
                        command = chooser.nextDouble() < 0.85 ? moves.get(chooser.nextInt(moves.size())) : wild(chooser);
                        if (striking && strike.hits(player)) {
                            command = MALFORMED[strike.random.nextInt(MALFORMED.length)];
                        }
                        commands.parseCommands(player, List.of(command), game);
                    }
                    json.append(player.getIndex() > 0 ? ", " : "").append(command == null ? "null" : quote(command));
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

    /**
     * When and who sends a malformed line: the seat(s) drawn (0, 1 or both), on the first ACTIONS
     * frame from the drawn day's drawn frame (0..2) on where one of them is still to move.
     */
    static class Strike {
        final Random random;
        final int day, frameOfDay, seats;
        int seenDay = -1, seenFrames = 0;
        boolean done = false;

        Strike(Random random) {
            this.random = random;
            day = random.nextInt(24);
            frameOfDay = random.nextInt(3);
            seats = random.nextInt(3);
        }

        boolean hits(Player player) {
            return seats == 2 || seats == player.getIndex();
        }

        boolean due(Game game, List<Player> players) {
            seenFrames = game.getRound() == seenDay ? seenFrames + 1 : 0;
            seenDay = game.getRound();
            boolean reached = game.getRound() > day || (game.getRound() == day && seenFrames >= frameOfDay);
            boolean someoneHit = players.stream().anyMatch(player -> !player.isWaiting() && hits(player));
            if (done || !reached || !someoneHit) {
                return false;
            }
            done = true;
            return true;
        }
    }

    /** `text` as a JSON string. */
    static String quote(String text) {
        StringBuilder quoted = new StringBuilder("\"");
        for (char c : text.toCharArray()) {
            if (c == '"' || c == '\\') {
                quoted.append('\\').append(c);
            } else if (c < 0x20 || c > 0x7e) {
                quoted.append(String.format("\\u%04x", (int) c));
            } else {
                quoted.append(c);
            }
        }
        return quoted.append('"').toString();
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
