// A competition's leagues page: every league, the highest first, with its boss and its members
// (ratings on the competition's ladder, best first; "hidden" while the competition hides its
// ranking), and the promotions, newest first; refreshed
// from GET /api/v1/competitions/{id}/leagues (page data: competition, leagues, url, poll_ms)
// until the competition's deadline.

import { h, pageData, getJson, ReadableError, percent, shortTime, signed } from "./dom.js";

const data = pageData();
const COLUMNS = [["#", true], ["Bot", false], ["Author", false], ["Elo (95%)", true], ["Games", true]]; // [label, numeric]

function botCell(bot) {
  return h("a", { href: `/bots/${bot.bot_id}`, class: "bot-link" }, bot.name, "\u00a0", h("span", { class: "version" }, `v${bot.version}`));
}

let rankingHidden = false; // the competition hides its ranking: the API gives no rating

function ratingText(bot) {
  if (rankingHidden) return "hidden";
  if (bot.rating === null) return "unrated";
  return `${signed(bot.rating, 0)} (${signed(bot.interval_low, 0)} to ${signed(bot.interval_high, 0)})`;
}

function membersTable(league) {
  if (!league.members.length) return h("p", { class: "muted members-empty" }, "No bot plays in this league yet.");
  return h(
    "table",
    { class: "data members" },
    h("caption", { class: "visually-hidden" }, `Bots of ${league.name}, best rated first`),
    h("thead", {}, h("tr", {}, COLUMNS.map(([label, numeric]) => h("th", { scope: "col", class: numeric ? "num" : null }, label)))),
    h(
      "tbody",
      {},
      league.members.map((bot, index) =>
        h("tr", { class: "member", "data-bot": bot.bot_id }, h("td", { class: "num" }, index + 1), h("td", {}, botCell(bot)), h("td", {}, bot.author), h("td", { class: "num rating" }, ratingText(bot)), h("td", { class: "num" }, bot.games)),
      ),
    ),
  );
}

function leagueSection(league, index, count) {
  const top = index === count - 1;
  const gate = top ? "its boss is the yardstick of the top league: no one rises above it" : "beat the boss to rise";
  return h(
    "section",
    { class: "panel league", "data-league": league.name },
    h("h2", {}, league.name, " ", h("span", { class: "muted small" }, league.members.length === 1 ? "1 bot" : `${league.members.length} bots`)),
    h("p", { class: "boss" }, "Boss: ", botCell(league.boss), ` · ${ratingText(league.boss)} · ${gate}`),
    membersTable(league),
  );
}

function promotionItem(promotion) {
  return h(
    "li",
    { class: "promotion" },
    h("time", { datetime: promotion.at }, shortTime(promotion.at)),
    " ",
    h("a", { href: `/bots/${promotion.bot_id}` }, promotion.name),
    ` rose from ${promotion.from_league} to ${promotion.to_league}`,
    promotion.probability === null ? ` after ${promotion.games} games` : `: P(stronger than the boss) ${percent(promotion.probability, 1)} after ${promotion.games} games`,
  );
}

function draw(view) {
  rankingHidden = view.ranking_hidden;
  document.getElementById("league-rule").textContent = `Every entrant starts in the lowest league and plays only its league. A bot rises when, after ${view.placement_games} games there, it is stronger than its league's boss with probability ${percent(view.promotion_level)} or more (the ladder's rating fit). A new version keeps its league.`;
  const leagues = view.leagues.map((league, index) => leagueSection(league, index, view.leagues.length));
  document.getElementById("leagues").replaceChildren(...leagues.reverse());
  const promotions = view.leagues.flatMap((league) => league.promotions).sort((a, b) => b.at.localeCompare(a.at));
  const list = document.getElementById("promotions");
  if (promotions.length) list.replaceChildren(...promotions.map(promotionItem));
  else list.replaceChildren(h("li", { class: "muted" }, "No promotions yet."));
}

/** Refreshes the leagues every poll_ms until the deadline (not while the tab is hidden). */
async function poll() {
  const note = document.getElementById("leagues-updated");
  if (Date.now() >= Date.parse(data.competition.deadline)) {
    note.textContent = "";
    return;
  }
  if (!document.hidden) {
    try {
      draw(await getJson(data.url));
      note.textContent = `live: updated ${new Date().toLocaleTimeString()}`;
    } catch (error) {
      if (!(error instanceof ReadableError)) console.error(error); // a bug of this page
      note.textContent = `live updates paused (${error instanceof ReadableError ? error.message : "this page failed to draw the leagues"}); retrying`;
    }
  }
  setTimeout(poll, data.poll_ms);
}

draw(data.leagues);
if (["upcoming", "open"].includes(data.competition.phase)) setTimeout(poll, data.poll_ms); // until the deadline
