// A challenge's page: its progress (pairs played of those asked), the challenger's W/D/L, the Elo
// difference with its 95% interval, the pairs by the challenger's points, and its games, each a
// link to the replay viewer; refreshed from GET /api/v1/challenges/{id} while it is open.

import { h, pageData, getJson, ReadableError } from "./dom.js";
import { eloText, eloValue } from "./elo.js";
import { gamesTable } from "./gametable.js";
import { pairsPlayed } from "./challengetable.js";

const data = pageData();
const POLL_MS = 3000; // while the challenge is open
const PAIR_SCORES = ["0", "½", "1", "1½", "2"]; // the challenger's points in a pair, per count

function fact(label, value, note, valueClass = "") {
  return h("div", { class: "fact" }, h("span", { class: "label" }, label), h("span", { class: `value ${valueClass}` }, value), note && h("span", { class: "note" }, note));
}

function draw(challenge) {
  const { progress } = challenge;
  document.getElementById("pairs-bar").value = progress.done + progress.failed;
  document.getElementById("pairs-text").textContent = pairsPlayed(challenge);
  const states = [progress.running && `${progress.running} playing now`, progress.queued && `${progress.queued} waiting`, progress.failed && `${progress.failed} failed`].filter(Boolean);
  document.getElementById("pairs-states").textContent = states.join(", ");
  const status = document.getElementById("challenge-status");
  status.textContent = challenge.status;
  status.dataset.status = challenge.status;
  document.getElementById("challenge-facts").replaceChildren(
    fact("W / D / L", `${challenge.wins} / ${challenge.draws} / ${challenge.losses}`, `${challenge.games} games`, "wdl"),
    fact("Elo difference", eloValue(challenge), eloText(challenge), "elo-value"),
  );
  document.getElementById("pentanomial").replaceChildren(
    h(
      "table",
      { class: "data pentanomial" },
      h("caption", {}, `Pairs by ${challenge.bot.name}'s points (seat-swapped games from one opening)`),
      h("thead", {}, h("tr", {}, PAIR_SCORES.map((score) => h("th", { scope: "col", class: "num" }, score)))),
      h("tbody", {}, h("tr", {}, challenge.pentanomial.map((count) => h("td", { class: "num" }, count)))),
    ),
  );
  document.getElementById("games").replaceChildren(gamesTable(challenge.game_list, { botId: challenge.bot.id }));
}

/** Refreshes the open challenge every POLL_MS until it finishes (not while the tab is hidden). */
async function poll() {
  const note = document.getElementById("challenge-updated");
  let open = true;
  if (!document.hidden) {
    try {
      const challenge = await getJson(`/api/v1/challenges/${data.challenge.id}`);
      draw(challenge);
      open = challenge.status === "open";
      note.textContent = open ? `live: updated ${new Date().toLocaleTimeString()}` : "";
    } catch (error) {
      if (!(error instanceof ReadableError)) console.error(error); // a bug of this page
      note.textContent = `live updates paused (${error instanceof ReadableError ? error.message : "this page failed to draw the challenge"}); retrying`;
    }
  }
  if (open) setTimeout(poll, POLL_MS);
}

draw(data.challenge);
if (data.challenge.status === "open") setTimeout(poll, POLL_MS);
