// The table of finished games, shared by the games page and the bot page, and how a game ended
// in words: a normal end (the rules decided), an illegal move, or another forfeit with its cause.

import { h, botLink, shortTime } from "./dom.js";

// The runner's causes of a forfeit that mean "the bot chose a move the rules forbid"
// (arena_bots.match: "illegal action 3 on head 'move'", "malformed action ...").
const ILLEGAL_MOVE = /\b(illegal|malformed) action\b/;

/** How `game` ended: {kind: "normal" | "illegal" | "forfeit", label, detail}.
 *  `game` has the API's `end_reason` and `forfeit_seat` (null unless one seat forfeited). */
export function describeEnd(game) {
  const reason = game.end_reason;
  const forfeited = game.forfeit_seat !== null || reason.startsWith("every player forfeits");
  if (!forfeited) return { kind: "normal", label: "normal end", detail: reason };
  const cause = reason.includes(": ") ? reason.slice(reason.indexOf(": ") + 2) : reason;
  const who = game.forfeit_seat === null ? "every player" : `P${game.forfeit_seat + 1}`;
  const kind = ILLEGAL_MOVE.test(cause) ? "illegal" : "forfeit";
  return { kind, label: kind === "illegal" ? "illegal move" : "forfeit", detail: `${who}: ${cause}` };
}

/** The result for people: "1–0" style, or win/draw/loss from `botId`'s side when given. */
export function resultText(game, botId = null) {
  if (botId === null) return { 1: "1–0", 0.5: "½–½", 0: "0–1" }[game.score] ?? String(game.score);
  const score = game.first.id === botId ? game.score : 1 - game.score;
  return score === 1 ? "win" : score === 0 ? "loss" : "draw";
}

/** A table of `games` (the API's GameSummary list), or a short note when there are none.
 *  With `botId`, results are that bot's; with `ladders` ({id: name}), a column names each game's ladder. */
export function gamesTable(games, { botId = null, ladders = null } = {}) {
  if (!games.length) return h("p", { class: "muted" }, "No games yet.");
  return h(
    "table",
    { class: "data games" },
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        h("th", { scope: "col" }, "Game"),
        ladders && h("th", { scope: "col" }, "Ladder"),
        h("th", { scope: "col", class: "wide-only" }, "Played"),
        h("th", { scope: "col" }, "P1"),
        h("th", { scope: "col" }, "P2"),
        h("th", { scope: "col" }, "Result"),
        h("th", { scope: "col" }, "End"),
        h("th", { scope: "col", class: "num wide-only" }, "Steps"),
      ),
    ),
    h("tbody", {}, games.map((game) => gameRow(game, botId, ladders))),
  );
}

function gameRow(game, botId, ladders) {
  const end = describeEnd(game);
  const result = resultText(game, botId);
  return h(
    "tr",
    { "data-game-id": game.id },
    h("td", { class: "game" }, h("a", { href: `/games/${game.id}` }, `#${game.id}`)),
    ladders && h("td", { class: "ladder" }, h("a", { href: `/ladders/${game.ladder_id}` }, ladders[game.ladder_id] ?? `ladder ${game.ladder_id}`)),
    h("td", { class: "played wide-only" }, shortTime(game.created_at)),
    h("td", { class: "seat first" }, botLink(game.first)),
    h("td", { class: "seat second" }, botLink(game.second)),
    h("td", { class: `result ${botId === null ? "" : result}` }, result),
    h("td", { class: "end" }, h("span", { class: `badge end-${end.kind}` }, end.label), " ", h("span", { class: "end-detail" }, end.detail)),
    h("td", { class: "num steps wide-only" }, game.steps),
  );
}
