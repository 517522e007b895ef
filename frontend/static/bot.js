// A bot's page: its rating history (the estimate after each refit inside its 95% band), its
// record against each opponent, and its recent games.

import { h, svg, pageData, botLink, percent } from "./dom.js";
import { drawAtWidth, padded, plotFrame, points, ticks } from "./plot.js";
import { gamesTable } from "./gametable.js";

const data = pageData();
const HISTORY_HEIGHT = 220;

function drawHistory(container, history, played) {
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
