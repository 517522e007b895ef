// The leaderboard: sortable rows with each rating's 95% interval drawn as a bar on one shared
// scale, house bots and provisional ratings marked, and live updates: the page polls the API's
// leaderboard every `poll_ms` and redraws the rows in place, without reloading. The progress
// line counts pairings by state and estimates the time left at the ladder's pace (the pairings
// it finished per minute lately, measured by the server: a figure from the first view).
// Training sessions' checkpoints carry a badge and can be hidden (the "hide checkpoints" box).
// Below the table, the ladder's games in progress (polled with it) link to the live viewer.

import { h, svg, getJson, pageData, duration, ReadableError } from "./dom.js";
import { padded } from "./plot.js";

const BAR = { width: 200, height: 18 }; // the interval bar's viewBox; it stretches to its cell

// How each sortable column orders its rows; `descending` is the first click's direction.
const SORTS = {
  rank: { value: (entry) => entry.rank ?? Infinity, descending: false },
  name: { value: (entry) => entry.name.toLowerCase(), descending: false },
  author: { value: (entry) => (entry.author ?? "").toLowerCase(), descending: false },
  rating: { value: (entry) => entry.rating ?? -Infinity, descending: true },
  width: { value: (entry) => (entry.rating === null ? Infinity : entry.high - entry.low), descending: false },
  games: { value: (entry) => entry.games, descending: true },
  score: { value: (entry) => (entry.games ? (entry.wins + entry.draws / 2) / entry.games : -1), descending: true },
};

const data = pageData();
const table = document.getElementById("leaderboard");
const hideCheckpoints = document.getElementById("hide-checkpoints");
const state = {
  board: data.leaderboard,
  live: data.live, // the ladder's games in progress (LiveGameSummary list)
  sort: { key: "rank", descending: false },
  trend: new Map(), // bot id -> rating change since the page was opened
  opened: new Map(data.leaderboard.entries.map((entry) => [entry.bot_id, entry.rating])),
  changed: new Set(), // bot ids whose row changed in the latest poll
};

function sortedEntries() {
  const { key, descending } = state.sort;
  const value = SORTS[key].value;
  const shown = state.board.entries.filter((entry) => !(entry.checkpoint && hideCheckpoints.checked));
  return shown.sort((a, b) => {
    const order = value(a) < value(b) ? -1 : value(a) > value(b) ? 1 : 0;
    return (descending ? -order : order) || (a.rank ?? Infinity) - (b.rank ?? Infinity);
  });
}

/** The Elo range every bar is drawn on: all intervals, padded, with 0 (the scale's zero: the house bots the games place) inside. */
function barDomain(entries) {
  const rated = entries.filter((entry) => entry.rating !== null);
  if (!rated.length) return null;
  const low = Math.min(0, ...rated.map((entry) => entry.low));
  const high = Math.max(0, ...rated.map((entry) => entry.high));
  return padded(low, high, 0.04);
}

function intervalBar(entry, [from, to]) {
  const x = (value) => ((value - from) / (to - from)) * BAR.width;
  const middle = BAR.height / 2;
  return svg(
    "svg",
    {
      class: "interval-bar",
      viewBox: `0 0 ${BAR.width} ${BAR.height}`,
      preserveAspectRatio: "none",
      role: "img",
      "aria-label": `95% interval ${Math.round(entry.low)} to ${Math.round(entry.high)}`,
      "data-low": entry.low,
      "data-high": entry.high,
      "data-rating": entry.rating,
    },
    svg("line", { class: "axis", x1: 0, x2: BAR.width, y1: middle, y2: middle }),
    svg("line", { class: "zero", x1: x(0), x2: x(0), y1: 2, y2: BAR.height - 2 }),
    svg("rect", { class: "interval", x: x(entry.low), width: Math.max(1, x(entry.high) - x(entry.low)), y: 4, height: BAR.height - 8, rx: 2 }),
    svg("line", { class: "estimate", x1: x(entry.rating), x2: x(entry.rating), y1: 1, y2: BAR.height - 1 }),
  );
}

function trendMark(botId) {
  const change = state.trend.get(botId);
  if (!change) return null;
  const up = change > 0;
  return h("span", { class: `trend ${up ? "up" : "down"}`, title: "change since you opened this page" }, `${up ? "▲" : "▼"}${Math.abs(change)}`);
}

function row(entry, domain) {
  const rated = entry.rating !== null;
  const classes = [entry.house && "house", entry.provisional && "provisional", state.changed.has(entry.bot_id) && "changed"];
  return h(
    "tr",
    { "data-bot-id": entry.bot_id, class: classes.filter(Boolean).join(" ") || null },
    h("td", { class: "num rank" }, entry.rank ?? "–"),
    h(
      "td",
      { class: "bot" },
      h("a", { href: `/bots/${entry.bot_id}`, class: "bot-link" }, entry.name),
      " ",
      h("span", { class: "version" }, `v${entry.version}`),
      entry.house && h("span", { class: "badge house", title: "a house bot: Arena's own reference player" }, "house"),
      entry.checkpoint && h("span", { class: "badge checkpoint", title: "a training session's checkpoint" }, "checkpoint"),
      entry.provisional && rated && h("span", { class: "provisional-mark", title: "provisional: too few games for a firm rating" }, "?"),
      h("span", { class: "player-kind" }, entry.player),
    ),
    h("td", { class: "wide-only author" }, entry.author ?? "Arena"),
    h("td", { class: "num rating" }, rated ? Math.round(entry.rating) : h("span", { class: "muted" }, "unrated"), " ", trendMark(entry.bot_id)),
    h(
      "td",
      { class: "interval-col" },
      rated && domain ? [intervalBar(entry, domain), h("span", { class: "interval-text" }, `${Math.round(entry.low)} to ${Math.round(entry.high)}`)] : h("span", { class: "muted" }, "not rated yet"),
    ),
    h("td", { class: "num games" }, entry.games),
    h("td", { class: "num wdl" }, h("span", { class: "w" }, entry.wins), " / ", h("span", { class: "d" }, entry.draws), " / ", h("span", { class: "l" }, entry.losses)),
  );
}

function renderRows() {
  const entries = sortedEntries();
  const domain = barDomain(entries);
  table.tBodies[0].replaceChildren(...entries.map((entry) => row(entry, domain)));
  if (!entries.length) {
    table.tBodies[0].append(h("tr", {}, h("td", { colspan: 7, class: "muted" }, "No active bots on this ladder yet.")));
  }
  for (const button of table.querySelectorAll("thead button[data-sort]")) {
    const sorted = button.dataset.sort === state.sort.key;
    button.closest("th").setAttribute("aria-sort", sorted ? (state.sort.descending ? "descending" : "ascending") : "none");
  }
}

/** The time left for `remaining` pairings at the ladder's pace (LadderPace: finished per minute lately). */
function timeLeft(remaining, pace) {
  const span = `${Math.round(pace.minutes)} min`;
  if (!pace.finished) return `time left unknown: no pairing finished in the last ${span}`;
  return `${duration(remaining / pace.per_minute)} left at ${pace.per_minute.toFixed(1)} pairings/min (last ${span})`;
}

function renderProgress() {
  const { done, running, queued, failed } = state.board.progress;
  const total = done + running + queued + failed;
  const line = document.getElementById("progress");
  if (!total) {
    line.replaceChildren("No pairings scheduled yet.");
    return;
  }
  const remaining = running + queued;
  line.replaceChildren(
    h("progress", { max: total, value: done + failed, "aria-label": "pairings played" }),
    h("span", { class: "counts" }, h("strong", {}, done), " done · ", h("strong", {}, running), " running · ", h("strong", {}, queued), " queued", failed ? [" · ", h("strong", {}, failed), " failed"] : null),
    h("span", { class: "eta" }, remaining ? timeLeft(remaining, state.board.pace) : "all scheduled pairings are played"),
  );
}

/** The games in progress, each a link to the live viewer with its players and how far it went. */
function renderLive() {
  const list = document.getElementById("live-games");
  if (!state.live.length) {
    list.replaceChildren(h("li", { class: "muted" }, "No game is being played on this ladder right now."));
    return;
  }
  list.replaceChildren(
    ...state.live.map((game) =>
      h(
        "li",
        { "data-pairing": game.pairing_id, "data-index": game.index },
        h("a", { href: `/live/${game.pairing_id}/${game.index}`, class: "live-link" }, `${game.seats[0].name} v${game.seats[0].version} against ${game.seats[1].name} v${game.seats[1].version}`),
        " ",
        h("span", { class: "muted" }, game.over ? `game over after ${game.ply} steps, being recorded` : `${game.ply} steps so far`),
      ),
    ),
  );
}

function render() {
  renderRows();
  renderProgress();
  renderLive();
}

function absorb(board) {
  const before = new Map(state.board.entries.map((entry) => [entry.bot_id, JSON.stringify(entry)]));
  state.changed = new Set(board.entries.filter((entry) => before.get(entry.bot_id) !== JSON.stringify(entry)).map((entry) => entry.bot_id));
  for (const entry of board.entries) {
    const opened = state.opened.get(entry.bot_id);
    if (entry.rating !== null && opened !== undefined && opened !== null) state.trend.set(entry.bot_id, Math.round(entry.rating - opened));
    if (!state.opened.has(entry.bot_id)) state.opened.set(entry.bot_id, entry.rating);
  }
  state.board = board;
}

async function poll() {
  const status = document.getElementById("updated");
  if (!document.hidden) {
    try {
      const [board, live] = await Promise.all([getJson(data.url), getJson(data.live_url)]);
      absorb(board);
      state.live = live;
      render();
      status.textContent = `live: updated ${new Date().toLocaleTimeString()}`;
    } catch (error) {
      if (!(error instanceof ReadableError)) console.error(error); // a bug of this page
      const reason = error instanceof ReadableError ? error.message : "this page failed to draw the news";
      status.textContent = `live updates paused (${reason}); retrying`;
    }
  }
  setTimeout(poll, data.poll_ms);
}

for (const button of table.querySelectorAll("thead button[data-sort]")) {
  button.addEventListener("click", () => {
    const key = button.dataset.sort;
    const descending = state.sort.key === key ? !state.sort.descending : SORTS[key].descending;
    state.sort = { key, descending };
    state.changed.clear();
    renderRows();
  });
}
hideCheckpoints.addEventListener("change", () => {
  state.changed.clear();
  renderRows();
});
render();
setTimeout(poll, data.poll_ms);
