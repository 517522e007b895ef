// The table of challenges on a bot's page: who challenged whom, how far they got and the result,
// each linking to its challenge's page (the API's ChallengeSummary list).

import { h, botLink, shortTime } from "./dom.js";
import { eloValue, eloText } from "./elo.js";

/** How many of its pairs a challenge has played: "3 / 8 pairs". */
export function pairsPlayed(challenge) {
  const { done, failed } = challenge.progress;
  return `${done + failed} / ${challenge.pairs} pairs`;
}

/** A table of `challenges`, or a short note when there are none. */
export function challengesTable(challenges) {
  if (!challenges.length) return h("p", { class: "muted" }, "No challenges yet.");
  const column = (label, attributes = {}) => h("th", { scope: "col", ...attributes }, label);
  return h(
    "table",
    { class: "data challenges" },
    h("thead", {}, h("tr", {}, column("Challenge"), column("Challenger"), column("Opponent"), column("Played", { class: "num" }), column("W / D / L", { class: "num" }), column("Elo", { class: "num" }), column("Kind", { class: "wide-only" }))),
    h(
      "tbody",
      {},
      challenges.map((challenge) =>
        h(
          "tr",
          { "data-challenge-id": challenge.id, "data-status": challenge.status },
          h("td", {}, h("a", { href: `/challenges/${challenge.id}` }, `#${challenge.id}`), h("span", { class: "muted small" }, ` ${shortTime(challenge.created_at)}`)),
          h("td", {}, botLink(challenge.bot), h("span", { class: "muted" }, ` by ${challenge.user}`)),
          h("td", {}, botLink(challenge.opponent)),
          h("td", { class: "num" }, challenge.status === "open" ? `${pairsPlayed(challenge)} (playing)` : pairsPlayed(challenge)),
          h("td", { class: "num wdl" }, `${challenge.wins} / ${challenge.draws} / ${challenge.losses}`),
          h("td", { class: "num elo", title: eloText(challenge) }, eloValue(challenge)),
          h("td", { class: "wide-only" }, h("span", { class: `badge ${challenge.rated ? "rated" : "unrated"}` }, challenge.rated ? "rated" : "unrated")),
        ),
      ),
    ),
  );
}
