// "My bots": the signed-in user's bots with each version's state (rating, SPRT, pairings booked),
// their training sessions and the games people played against their bots, from GET
// /api/v1/me/bots with the token this browser keeps (account.js). Without a token, or with one the
// API refuses, the page asks for one.

import { h, getJson, shortTime, ReadableError } from "./dom.js";
import { forgetToken, labelAccountLink, savedToken, saveToken } from "./account.js";

const form = document.getElementById("sign-in");
const mine = document.getElementById("mine");
const SPRT_STATES = { running: "running", H1: "better (H1)", H0: "not better (H0)", stopped: "stopped" };
const HUMAN_RESULTS = { 1: "the person won", 0.5: "draw", 0: "your bot won" };

function table(className, headings, rows) {
  return h(
    "table",
    { class: `data compact ${className}` },
    h("thead", {}, h("tr", {}, headings.map((heading) => h("th", { scope: "col" }, heading)))),
    h("tbody", {}, rows),
  );
}

function ratingText(rating, hidden) {
  if (hidden) return h("span", { class: "muted" }, "hidden until the final");
  if (!rating) return h("span", { class: "muted" }, "unrated");
  return `${Math.round(rating.rating)} (${Math.round(rating.low)} to ${Math.round(rating.high)}), ${rating.games} games`;
}

function sprtText(sprt) {
  if (!sprt) return "–";
  const pairs = `${sprt.pairs} pairs, LLR ${sprt.llr.toFixed(2)} of ${sprt.lower_bound.toFixed(2)} to ${sprt.upper_bound.toFixed(2)}`;
  return `${SPRT_STATES[sprt.status] ?? sprt.status}: ${pairs}`;
}

function pairingsText(version) {
  const parts = [version.running && `${version.running} playing`, version.queued && `${version.queued} waiting`];
  return parts.filter(Boolean).join(", ") || "none booked";
}

function versionRow(version) {
  return h(
    "tr",
    { "data-bot-id": version.id, "data-status": version.status },
    h("td", {}, h("a", { href: `/bots/${version.id}` }, `v${version.version}`), version.checkpoint && h("span", { class: "badge checkpoint" }, "checkpoint")),
    h("td", {}, version.status === "active" ? "active" : h("span", { class: "badge retired" }, version.status)),
    h("td", { class: "rating" }, ratingText(version.rating, version.rating_hidden)),
    h("td", { class: "sprt-state" }, sprtText(version.sprt)),
    h("td", { class: "pairings" }, pairingsText(version)),
  );
}

function botSection(bot) {
  return h(
    "section",
    { class: "panel owned-bot", "data-name": bot.name },
    h("h3", {}, bot.name, " ", h("span", { class: "muted" }, "on "), h("a", { href: `/ladders/${bot.ladder_id}` }, bot.ladder)),
    table("versions", ["Version", "State", "Rating (95%)", "SPRT", "Pairings"], bot.versions.map(versionRow)),
  );
}

function trainingTable(sessions) {
  if (!sessions.length) return h("p", { class: "muted" }, "No training sessions.");
  return table(
    "training-sessions",
    ["Session", "Bot", "Game", "Kit", "State", "Progress"],
    sessions.map((run) =>
      h(
        "tr",
        { "data-session-id": run.id, "data-status": run.status },
        h("td", {}, h("a", { href: `/training/${run.id}` }, `#${run.id}`)),
        h("td", {}, run.bot_name),
        h("td", {}, run.game),
        h("td", {}, run.kit),
        h("td", {}, h("span", { class: "badge status", "data-status": run.status }, run.status)),
        h("td", {}, `generation ${run.progress.generation}, ${run.progress.games} games`),
      ),
    ),
  );
}

function humanGamesTable(games) {
  if (!games.length) return h("p", { class: "muted" }, "Nobody has played your bots yet.");
  return table(
    "human-games",
    ["Game", "Bot", "Started", "Result"],
    games.map((game) =>
      h(
        "tr",
        { "data-human-game-id": game.id },
        h("td", {}, h("a", { href: game.status === "over" ? `/play/${game.id}/replay` : `/play/${game.id}` }, `#${game.id}`)),
        h("td", {}, h("a", { href: `/bots/${game.bot.id}` }, `${game.bot.name} v${game.bot.version}`)),
        h("td", {}, shortTime(game.created_at)),
        h("td", {}, game.status === "over" ? HUMAN_RESULTS[game.human_score] : "in progress"),
      ),
    ),
  );
}

function signOutButton() {
  const button = h("button", { type: "button", class: "secondary", id: "sign-out" }, "Sign out");
  button.addEventListener("click", () => {
    forgetToken();
    showSignIn("");
  });
  return button;
}

function draw(yours) {
  const bots = yours.bots.length
    ? yours.bots.map(botSection)
    : [h("p", { class: "muted" }, "No bots yet: ", h("a", { href: "/upload" }, "upload one"), ".")];
  mine.replaceChildren(
    h("p", { class: "signed-in" }, "Signed in as ", h("strong", { class: "user" }, yours.user), " ", signOutButton()),
    h("h2", {}, "Bots"),
    ...bots,
    h("section", { class: "panel" }, h("h2", {}, "Training sessions"), trainingTable(yours.training_sessions)),
    h("section", { class: "panel" }, h("h2", {}, "Games against people"), humanGamesTable(yours.human_games)),
  );
}

function showSignIn(reason) {
  mine.replaceChildren();
  form.hidden = false;
  document.getElementById("sign-in-error").textContent = reason;
  labelAccountLink();
}

/** Reads the caller's bots with `token`; a token the API refuses is forgotten and asked for again. */
async function load(token) {
  try {
    const yours = await getJson("/api/v1/me/bots", { Authorization: `Bearer ${token}` });
    saveToken(token);
    form.hidden = true;
    labelAccountLink();
    draw(yours);
  } catch (error) {
    if (!(error instanceof ReadableError)) console.error(error); // a bug of this page
    if (error.code === "bad_token" || error.code === "unauthorized") forgetToken();
    showSignIn(error instanceof ReadableError ? error.message : "this page failed to draw your bots");
  }
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  load(String(new FormData(form).get("token")).trim());
});

const token = savedToken();
if (token) load(token);
else showSignIn("");
