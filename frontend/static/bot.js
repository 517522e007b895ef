// A bot's page: what is booked for it and when it plays (refreshed), its rating history (the
// estimate after each refit inside its 95% band), its record against each opponent, its recent
// games and challenges, and for a new version its SPRT against the previous one, refreshed while it runs; and
// the forms that start a game against it and challenge it.

import { h, svg, pageData, botLink, percent, getJson, shortTime, duration, ReadableError } from "./dom.js";
import { drawAtWidth, padded, plotFrame, points, ticks } from "./plot.js";
import { gamesTable } from "./gametable.js";
import { startGame } from "./playstart.js";
import { eloText, eloValue } from "./elo.js";
import { challengesTable } from "./challengetable.js";
import { offerChallenge } from "./challengeform.js";

const data = pageData();
const HISTORY_HEIGHT = 220;

function drawHistory(container, history, played) {
  if (data.bot.rating_hidden) {
    container.replaceChildren(h("p", { class: "muted" }, "Hidden: its competition shows no rating until the final."));
    return;
  }
  if (!history.length) {
    const why = played ? "its games count from the next refit." : "the bot has not finished a game.";
    container.replaceChildren(h("p", { class: "muted" }, `No rating yet: ${why}`));
    return;
  }
  drawAtWidth(container, (width) => {
    const yDomain = padded(Math.min(...history.map((p) => p.low)), Math.max(...history.map((p) => p.high)));
    const last = Math.max(history.length - 1, 1);
    const { root, x, y } = plotFrame({
      width,
      height: HISTORY_HEIGHT,
      xDomain: [0, last],
      yDomain,
      xTicks: ticks(0, history.length - 1, Math.min(6, history.length - 1)).filter(Number.isInteger),
      yTicks: ticks(...yDomain, 5),
      xFormat: (index) => history[index].games,
      yFormat: (value) => Math.round(value),
      margin: { bottom: 40 },
    });
    const at = (index, value) => [x(index), y(value)];
    const band = [...history.map((p, i) => at(i, p.high)), ...history.map((p, i) => at(i, p.low)).reverse()];
    root.append(
      svg("polygon", { class: "band", points: points(band) }),
      svg("polyline", { class: "rating-line", points: points(history.map((p, i) => at(i, p.rating))), "data-count": history.length }),
      ...history.map((p, i) =>
        svg("circle", { class: "rating-dot", cx: x(i), cy: y(p.rating), r: 3.5 }, svg("title", {}, `after ${p.games} games: ${Math.round(p.rating)} (95%: ${Math.round(p.low)} to ${Math.round(p.high)})`)),
      ),
      svg("text", { class: "axis-label", x: (x(0) + x(last)) / 2, y: HISTORY_HEIGHT - 4 }, "games played at each refit"),
    );
    container.replaceChildren(root);
  });
}

function scoreBar(score) {
  const fill = h("span", { class: "fill" });
  fill.style.width = percent(score);
  return h("span", { class: "score-bar", "data-score": score, "aria-hidden": "true" }, fill);
}

function opponentsTable(opponents) {
  if (!opponents.length) return h("p", { class: "muted" }, "No opponents met yet.");
  return h(
    "table",
    { class: "data opponents" },
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Opponent"), h("th", { scope: "col", class: "num wide-only" }, "Games"), h("th", { scope: "col", class: "num" }, "W / D / L"), h("th", { scope: "col", class: "num" }, "Score"))),
    h(
      "tbody",
      {},
      opponents.map((record) =>
        h(
          "tr",
          { "data-opponent-id": record.opponent.id },
          h("td", {}, botLink(record.opponent), record.author ? h("span", { class: "muted" }, ` by ${record.author}`) : h("span", { class: "badge house" }, "house")),
          h("td", { class: "num wide-only" }, record.games),
          h("td", { class: "num wdl" }, `${record.wins} / ${record.draws} / ${record.losses}`),
          h("td", { class: "num" }, scoreBar(record.score), " ", percent(record.score)),
        ),
      ),
    ),
  );
}

drawHistory(document.getElementById("history"), data.history, data.games.length > 0);
document.getElementById("opponents").replaceChildren(opponentsTable(data.opponents));
document.getElementById("games").replaceChildren(gamesTable(data.games, { botId: data.bot.id }));
document.getElementById("challenges").replaceChildren(challengesTable(data.bot.challenges));
offerChallenge(data.bot);

// ---- the SPRT of a new version against its previous one (GET /api/v1/bots/{id}/sprt) ----------

const SPRT_POLL_MS = 5000; // while the test runs
const PAIR_SCORES = ["0", "½", "1", "1½", "2"]; // the new version's points in a pair, per count
const VERDICTS = {
  running: "running",
  H1: "better (H1 accepted)",
  H0: "not better (H0 accepted)",
  stopped: "stopped: a version was retired before the verdict",
};

/** The LLR as a marker on a bar from the lower bound (H0) to the upper bound (H1). */
function llrBar(test) {
  const span = test.upper_bound - test.lower_bound;
  const at = (value) => percent(Math.min(Math.max((value - test.lower_bound) / span, 0), 1), 2);
  const marker = h("span", { class: "llr-marker" });
  marker.style.left = at(test.llr);
  const zero = h("span", { class: "llr-zero" });
  zero.style.left = at(0);
  return h(
    "div",
    { class: "llr" },
    h("span", { class: "llr-bound" }, `H0 ${test.lower_bound.toFixed(2)}`),
    h("span", { class: "llr-bar", role: "img", "aria-label": `LLR ${test.llr.toFixed(2)} between ${test.lower_bound.toFixed(2)} and ${test.upper_bound.toFixed(2)}`, "data-llr": test.llr }, zero, marker),
    h("span", { class: "llr-bound" }, `H1 ${test.upper_bound.toFixed(2)}`),
  );
}

function sprtView(test) {
  const unit = test.model === "normalized" ? "nElo" : "Elo";
  return h(
    "div",
    { class: "sprt-body", "data-status": test.status },
    h(
      "p",
      {},
      botLink(test.new_bot), " against ", botLink(test.old_bot), ": ",
      h("strong", { class: `verdict verdict-${test.status}` }, VERDICTS[test.status] ?? test.status),
    ),
    h(
      "section",
      { class: "facts", "aria-label": "SPRT" },
      h("div", { class: "fact" }, h("span", { class: "label" }, "LLR"), h("span", { class: "value llr-value" }, test.llr.toFixed(2)), llrBar(test)),
      h("div", { class: "fact" }, h("span", { class: "label" }, "Elo difference"), h("span", { class: "value elo-value" }, eloValue(test)), h("span", { class: "note" }, eloText(test))),
      h("div", { class: "fact" }, h("span", { class: "label" }, "Pairs"), h("span", { class: "value" }, test.pairs), h("span", { class: "note" }, `H0: ${test.elo0} ${unit}, H1: ${test.elo1} ${unit}, α ${test.alpha}, β ${test.beta}`)),
    ),
    h(
      "table",
      { class: "data pentanomial" },
      h("caption", {}, "Pairs by the new version's points (seat-swapped games from one opening)"),
      h("thead", {}, h("tr", {}, PAIR_SCORES.map((score) => h("th", { scope: "col", class: "num" }, score)))),
      h("tbody", {}, h("tr", {}, test.pentanomial.map((count) => h("td", { class: "num" }, count)))),
    ),
  );
}

function drawSprt(test) {
  document.getElementById("sprt").replaceChildren(sprtView(test));
  document.getElementById("sprt-panel").hidden = false;
}

/** Refreshes the running test every SPRT_POLL_MS until its verdict (not while the tab is hidden). */
async function pollSprt() {
  const status = document.getElementById("sprt-updated");
  let running = true;
  if (!document.hidden) {
    try {
      const test = await getJson(`/api/v1/bots/${data.bot.id}/sprt`);
      drawSprt(test);
      running = test.status === "running";
      status.textContent = running ? `live: updated ${new Date().toLocaleTimeString()}` : "";
    } catch (error) {
      if (!(error instanceof ReadableError)) console.error(error); // a bug of this page
      const reason = error instanceof ReadableError ? error.message : "this page failed to draw the test";
      status.textContent = `live updates paused (${reason}); retrying`;
    }
  }
  if (running) setTimeout(pollSprt, SPRT_POLL_MS);
}

if (data.bot.sprt) {
  drawSprt(data.bot.sprt);
  if (data.bot.sprt.status === "running") setTimeout(pollSprt, SPRT_POLL_MS);
}

// ---- the queue: what is booked for the bot and when it plays (BotDetail.queue) -------------------

const QUEUE_POLL_MS = 5000;
const QUEUE_STATES = { running: "playing now", queued: "waiting" };

/** When the bot's next queued pairing starts: its place in the ladder's queue and, at the ladder's
 *  pace (pairings finished per minute lately), in minutes. */
function nextStart(queue) {
  const { pace, ahead } = queue;
  const place = ahead === 0 ? "Its next pairing is first in the ladder's queue" : `${ahead} pairing${ahead === 1 ? " of the ladder is" : "s of the ladder are"} ahead of its next one`;
  if (queue.starts_in_minutes === null) return `${place}; no estimate of when: no pairing of this ladder finished in the last ${Math.round(pace.minutes)} min`;
  const when = ahead === 0 ? "it starts when a worker is free" : `it should start in ${duration(queue.starts_in_minutes)}`;
  return `${place}: ${when} (the ladder plays ${pace.per_minute.toFixed(1)} pairings/min)`;
}

function bookedTable(booked) {
  return h(
    "table",
    { class: "data compact booked" },
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Pairing"), h("th", { scope: "col" }, "Opponent"), h("th", { scope: "col" }, "State"), h("th", { scope: "col" }, "Booked"))),
    h(
      "tbody",
      {},
      booked.map((pairing) =>
        h(
          "tr",
          { "data-pairing-id": pairing.id, "data-status": pairing.status },
          h("td", {}, `#${pairing.id}`),
          h("td", {}, botLink(pairing.opponent), pairing.challenge_id !== null && h("a", { class: "muted small challenge-link", href: `/challenges/${pairing.challenge_id}` }, ` challenge #${pairing.challenge_id}`)),
          h("td", {}, QUEUE_STATES[pairing.status]),
          h("td", {}, shortTime(pairing.booked_at)),
        ),
      ),
    ),
  );
}

/** The queue's summary, the next pairing's place and expected start, and the booked pairings. */
function queueView(queue) {
  if (!queue.running && !queue.queued) {
    return [h("p", { class: "muted queue-summary" }, "Nothing is booked for it right now: the ladder's scheduler books its next pairings in a coming round.")];
  }
  const counts = [queue.running && `${queue.running} playing now`, queue.queued && `${queue.queued} waiting`].filter(Boolean).join(", ");
  const listed = queue.booked.length < queue.running + queue.queued ? ` (the first ${queue.booked.length} below)` : "";
  return [
    h("p", { class: "queue-summary" }, `Pairings booked: ${counts}${listed}.`),
    queue.ahead !== null && h("p", { class: "queue-next", "data-ahead": queue.ahead }, `${nextStart(queue)}.`),
    bookedTable(queue.booked),
  ];
}

/** Redraws the queue every QUEUE_POLL_MS (not while the tab is hidden) from GET /api/v1/bots/{id}. */
async function pollQueue() {
  if (!document.hidden) {
    try {
      drawQueue((await getJson(`/api/v1/bots/${data.bot.id}`)).queue);
    } catch (error) {
      if (!(error instanceof ReadableError)) console.error(error); // a bug of this page
    }
  }
  setTimeout(pollQueue, QUEUE_POLL_MS);
}

function drawQueue(queue) {
  document.getElementById("queue").replaceChildren(...queueView(queue).filter(Boolean));
}

if (document.getElementById("queue")) {
  drawQueue(data.bot.queue);
  setTimeout(pollQueue, QUEUE_POLL_MS);
}

// ---- games against people: the latest, and the form that starts one ----------------------------
function humanGamesTable(games) {
  if (!games.length) return h("p", { class: "muted" }, "Nobody has played it yet.");
  const result = (game) => (game.status !== "over" ? "in progress" : { 1: "the person won", 0.5: "draw", 0: "the bot won" }[game.human_score]);
  return h(
    "table",
    { class: "data compact human-games" },
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Game"), h("th", { scope: "col" }, "Started"), h("th", { scope: "col" }, "Person"), h("th", { scope: "col" }, "Result"), h("th", { scope: "col", class: "num" }, "Steps"))),
    h(
      "tbody",
      {},
      games.map((game) =>
        h(
          "tr",
          { "data-human-game-id": game.id },
          h("td", {}, h("a", { href: game.status === "over" ? `/play/${game.id}/replay` : `/play/${game.id}` }, `#${game.id}`)),
          h("td", {}, shortTime(game.created_at)),
          h("td", {}, `P${game.human_seat + 1}`),
          h("td", {}, result(game)),
          h("td", { class: "num" }, game.ply),
        ),
      ),
    ),
  );
}

document.getElementById("human-games")?.replaceChildren(humanGamesTable(data.human_games));

const playForm = document.getElementById("play-form");
playForm?.addEventListener("submit", async (event) => {
  event.preventDefault();
  const button = playForm.querySelector("button");
  const error = document.getElementById("play-error");
  button.disabled = true;
  error.textContent = "";
  try {
    await startGame(data.bot.id, Number(new FormData(playForm).get("seat")));
  } catch (failure) {
    if (!(failure instanceof ReadableError)) console.error(failure);
    error.textContent = failure instanceof ReadableError ? failure.message : "The game could not be started.";
    button.disabled = false;
  }
});
