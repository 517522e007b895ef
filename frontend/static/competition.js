// A competition's page: a countdown to its next moment (the opening, then the deadline) that ticks
// every second on the server's clock (the page's `now` fixes the browser's offset from it), the
// phase badge and the timeline following it; its ranking (its ladder's leaderboard, unless the
// competition hides it) and its entrants, refreshed from the API every `poll_ms` once entries
// have opened (after the deadline the ladder goes on rating the frozen entrants, and an entry
// started in time may still be validating). After the deadline, its final: the results API's
// phase (final, then finished) takes over from the clock's "closed", and the final's progress and
// ranking (provisional until it is finished; none while a hidden ranking is not yet out) are
// refreshed every `poll_ms` until the final is finished, when its downloads appear.

import { h, pageData, getJson, botLink, shortTime, percent, signed, ReadableError } from "./dom.js";

const data = pageData();
const { competition } = data;
const opens = Date.parse(competition.opens_at);
const deadline = Date.parse(competition.deadline);
const skew = Date.parse(data.now) - Date.now(); // ms the server's clock is ahead of the browser's
const MOMENTS = { opening: opens, deadline }; // the timeline's dated moments; the final follows the deadline
const FINAL_PHASES = new Set(["final", "finished"]); // the server's phases once the final has started
let finalPhase = FINAL_PHASES.has(competition.phase) ? competition.phase : null; // the latest results' phase

function serverNow() {
  return Date.now() + skew;
}

/** The phase by the clock, then by the final's results once it has started (store.competitions.phase). */
function phaseAt(now) {
  return now < opens ? "upcoming" : now < deadline ? "open" : finalPhase ?? "closed";
}

/** A span of `ms` as a clock, whole seconds rounded up: "03:04:05", or "2 d 03:04:05". */
function clock(ms) {
  const seconds = Math.max(0, Math.ceil(ms / 1000));
  const days = Math.floor(seconds / 86_400);
  const parts = [Math.floor(seconds / 3600) % 24, Math.floor(seconds / 60) % 60, seconds % 60];
  const text = parts.map((part) => String(part).padStart(2, "0")).join(":");
  return days ? `${days} d ${text}` : text;
}

function countdownText(phase, now) {
  if (phase === "upcoming") return `Entries open in ${clock(opens - now)}`;
  if (phase === "open") return `Entries close in ${clock(deadline - now)}`;
  if (phase === "final") return "Entries closed: the final is being played.";
  if (phase === "finished") return "The final is finished: its ranking is the result.";
  return "Entries closed: the final comes next.";
}

/** The countdown, the phase badge and the timeline's states (past, next, later) as of now. */
function tick() {
  const now = serverNow();
  const phase = phaseAt(now);
  const countdown = document.getElementById("countdown");
  countdown.textContent = countdownText(phase, now);
  countdown.dataset.phase = phase;
  const badge = document.getElementById("phase");
  badge.textContent = phase;
  badge.dataset.phase = phase;
  let nextFound = false;
  for (const item of document.querySelectorAll("#timeline li")) {
    // the final: after every dated moment, and past once it is finished
    const at = MOMENTS[item.dataset.moment] ?? (phase === "finished" ? -Infinity : Infinity);
    const state = at <= now ? "past" : nextFound ? "later" : "next";
    nextFound ||= state === "next";
    item.dataset.state = state;
  }
  setTimeout(tick, 1000 - (now % 1000)); // on the next whole second of the server's clock
}

function rankingRow(entry) {
  const rated = entry.rating !== null;
  return h(
    "tr",
    { "data-bot-id": entry.bot_id, class: entry.house ? "house" : null },
    h("td", { class: "num rank" }, entry.rank ?? "–"),
    h("td", { class: "bot" }, botLink({ id: entry.bot_id, name: entry.name, version: entry.version }), entry.house && h("span", { class: "badge house" }, "house")),
    h("td", { class: "author" }, entry.author ?? "Arena"),
    h("td", { class: "num rating" }, rated ? Math.round(entry.rating) : h("span", { class: "muted" }, "unrated")),
    h("td", { class: "num interval" }, rated ? `${Math.round(entry.low)} to ${Math.round(entry.high)}` : "–"),
    h("td", { class: "num games" }, entry.games),
    h("td", { class: "num wdl" }, `${entry.wins} / ${entry.draws} / ${entry.losses}`),
  );
}

function drawRanking(board) {
  const headings = ["#", "Bot", "Author", "Rating", "95% interval", "Games", "W / D / L"];
  const numeric = new Set(["#", "Rating", "95% interval", "Games", "W / D / L"]);
  const rows = board.entries.length
    ? board.entries.map(rankingRow)
    : [h("tr", {}, h("td", { colspan: headings.length, class: "muted" }, "No bot on its ladder yet."))];
  document.getElementById("ranking").replaceChildren(
    h(
      "table",
      { class: "data ranking" },
      h("thead", {}, h("tr", {}, headings.map((heading) => h("th", { scope: "col", class: numeric.has(heading) ? "num" : null }, heading)))),
      h("tbody", {}, rows),
    ),
  );
}

/** "12 of 30 pairings done · 1 failed · 4 in flight · 2 rounds" and the bar, from `progress`. */
function drawProgress(progress) {
  const bar = document.getElementById("final-bar");
  bar.max = Math.max(1, progress.booked);
  bar.value = progress.done;
  const parts = [`${progress.done} of ${plural(progress.booked, "pairing")} done`];
  if (progress.failed) parts.push(`${progress.failed} failed`);
  if (progress.in_flight) parts.push(`${progress.in_flight} in flight`);
  parts.push(plural(progress.rounds, "round"));
  document.getElementById("final-counts").textContent = parts.join(" · ");
}

/** An Elo figure of the final's ranking, relative to the entrants' mean: "+12", "−40". */
function elo(value) {
  return signed(Math.round(value));
}

/** A row of the final's ranking (finals.export's columns); `entrants` by bot id gives its bot and author. */
function finalRow(row, entrants) {
  const entrant = entrants.get(row.entrant_id);
  const rated = row.rating !== null;
  return h(
    "tr",
    { "data-bot-id": row.entrant_id },
    h("td", { class: "num rank" }, row.tied ? `${row.rank}=` : String(row.rank)),
    h("td", { class: "bot" }, entrant ? botLink(entrant.bot) : h("a", { href: `/bots/${row.entrant_id}`, class: "bot-link" }, row.name)),
    h("td", { class: "author" }, entrant ? entrant.author : ""),
    h("td", { class: "num rating" }, rated ? elo(row.rating) : h("span", { class: "muted" }, "no games")),
    h("td", { class: "num interval" }, rated ? `${elo(row.interval_low)} to ${elo(row.interval_high)}` : "–"),
    h("td", { class: "num wdl" }, `${row.wins} / ${row.draws} / ${row.losses}`),
    h("td", { class: "num stronger" }, row.stronger_than_next === null ? "–" : percent(row.stronger_than_next)),
  );
}

function drawFinalRanking(rows) {
  const entrants = new Map(latestEntrants.map((entrant) => [entrant.bot.id, entrant]));
  const headings = ["#", "Bot", "Author", "Rating", "95% interval", "W / D / L", "P(stronger than the next)"];
  const numeric = new Set(["#", "Rating", "95% interval", "W / D / L", "P(stronger than the next)"]);
  document.getElementById("final-ranking").replaceChildren(
    h(
      "table",
      { class: "data final-ranking" },
      h("thead", {}, h("tr", {}, headings.map((heading) => h("th", { scope: "col", class: numeric.has(heading) ? "num" : null }, heading)))),
      h("tbody", {}, rows.map((row) => finalRow(row, entrants))),
    ),
  );
}

/** The final's section from `results` (GET /competitions/{id}/results): its state, progress and
 * ranking (provisional, then final with its downloads; none while hidden). */
function drawFinal(results) {
  finalPhase = FINAL_PHASES.has(results.phase) ? results.phase : null;
  if (!finalPhase) return; // not started: the section shows the final's terms
  const finished = finalPhase === "finished";
  const state = document.getElementById("final-state");
  state.hidden = false;
  state.textContent = finished ? "final" : "provisional";
  state.dataset.state = state.textContent;
  document.getElementById("final-progress").hidden = false;
  drawProgress(results.progress);
  document.getElementById("final-ranking-hidden").hidden = !results.ranking_hidden;
  if (results.ranking) drawFinalRanking(results.ranking);
  document.getElementById("final-legend").hidden = !results.ranking;
  document.getElementById("final-downloads").hidden = !(finished && results.ranking);
}

function plural(count, noun) {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}

let latestEntrants = data.entrants; // the final's rows name their bots and authors from these

function drawEntrants(entrants) {
  latestEntrants = entrants;
  const authors = new Set(entrants.map((entrant) => entrant.author)).size;
  document.getElementById("entrant-counts").textContent = `(${plural(entrants.length, "bot")} by ${plural(authors, "author")})`;
  const table = document.getElementById("entrants");
  if (!entrants.length) {
    table.replaceChildren(h("p", { class: "muted" }, "No bot entered yet."));
    return;
  }
  table.replaceChildren(
    h(
      "table",
      { class: "data entrants" },
      h("thead", {}, h("tr", {}, ["Bot", "Author", "Entered", "How"].map((heading) => h("th", { scope: "col" }, heading)))),
      h(
        "tbody",
        {},
        entrants.map((entrant) =>
          h(
            "tr",
            { "data-bot-id": entrant.bot.id },
            h("td", { class: "bot" }, botLink(entrant.bot), entrant.status !== "active" && h("span", { class: "badge retired" }, entrant.status)),
            h("td", { class: "author" }, entrant.author),
            h("td", { class: "entered" }, h("time", { datetime: entrant.entered_at }, shortTime(entrant.entered_at))),
            h("td", { class: "kind" }, entrant.kind === "copy" ? "a copy of a ladder bot" : "an upload"),
          ),
        ),
      ),
    ),
  );
}

/** Refreshes the entrants and the ranking every `poll_ms` once entries have opened, and the final's
 * results from the deadline until the final is finished (not while the tab is hidden). */
async function poll() {
  const note = document.getElementById("ranking-updated"); // absent while the ranking is hidden
  const phase = phaseAt(serverNow());
  if (!document.hidden && phase !== "upcoming") {
    try {
      const [entrants, board, results] = await Promise.all([
        getJson(`/api/v1/competitions/${competition.id}/entries`),
        data.leaderboard && getJson(data.leaderboard_url),
        phase !== "open" && phase !== "finished" && getJson(data.results_url),
      ]);
      drawEntrants(entrants);
      if (board) drawRanking(board);
      if (results) drawFinal(results);
      if (note) note.textContent = `live: updated ${new Date().toLocaleTimeString()}`;
    } catch (error) {
      if (!(error instanceof ReadableError)) console.error(error); // a bug of this page
      const reason = error instanceof ReadableError ? error.message : "this page failed to draw the news";
      if (note) note.textContent = `live updates paused (${reason}); retrying`;
    }
  }
  setTimeout(poll, data.poll_ms);
}

drawEntrants(data.entrants);
if (data.results) drawFinal(data.results);
tick();
if (data.leaderboard) drawRanking(data.leaderboard);
setTimeout(poll, data.poll_ms);
