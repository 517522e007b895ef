// A live game against a bot: the board of the game's renderer, the person's legal moves offered
// on it (renderer.pick), each move sent to the API and the bot's answer drawn; resign, new game,
// and the bot's search of its last move on demand (the replay viewer's overlay).
//
// The game's key (needed to move) was answered when the game was started and is kept in this
// browser (playstart.js): another browser, or anyone without it, watches.

import { h, getJson, pageData, postJson, ReadableError } from "./dom.js";
import { keyName, startGame } from "./playstart.js";
import { labelSeats, loadRenderer } from "./renderer.js";
import { playedMoves, searchSummary, searchedMoves } from "./overlay.js";

const RESIGN_CONFIRM_MS = 4000;
const root = document.getElementById("play");
const elements = {
  status: document.getElementById("status"),
  caption: document.getElementById("board-caption"),
  search: document.getElementById("search"),
  showSearch: document.getElementById("show-search"),
  resign: document.getElementById("resign"),
  newGame: document.getElementById("new-game"),
  replayLink: document.getElementById("replay-link"),
};

function seatName(game, seat) {
  return game.seats[seat]?.person ? "You" : `${game.bot.name} v${game.bot.version}`;
}

function outcome(game) {
  const score = game.human_score;
  const verdict = score === 1 ? "You won" : score === 0 ? "The bot won" : "A draw";
  return `${verdict}: ${game.end_reason}.`;
}

function play(game, renderer) {
  const key = localStorage.getItem(keyName(game.id));
  const board = renderer.createBoard(document.getElementById("board"));
  let busy = false;

  labelSeats(renderer);

  function botSearch() {
    const last = game.last;
    if (!last) return null;
    const botSeats = last.actors.filter((seat) => !game.seats[seat]?.person);
    const mine = (move) => botSeats.includes(move.seat);
    return { heat: searchedMoves(last).filter(mine), played: playedMoves(last) };
  }

  function status() {
    if (game.status === "over") return outcome(game);
    if (busy) return "The bot is thinking…";
    if (!key) return "You are watching: only the browser that started this game can move in it.";
    if (!board.pick) return `This viewer cannot offer ${game.title} moves to click yet.`;
    return game.your_turn ? "Your move: click it on the board." : "Waiting for the bot…";
  }

  function draw() {
    const overlay = elements.showSearch.checked ? botSearch() : null;
    board.draw(game.view, overlay, game.last ? playedMoves(game.last) : []);
    elements.caption.textContent = renderer.caption(game.view);
    elements.status.textContent = status();
    const over = game.status === "over";
    elements.resign.disabled = over || busy || !key;
    elements.replayLink.hidden = !over;
    elements.search.replaceChildren(...searchPanel());
    const offer = !over && !busy && key && game.your_turn && board.pick;
    if (board.pick) board.pick(offer ? choices() : null, move, game.human_seat);
    root.dataset.ply = game.ply;
    root.dataset.status = busy ? "thinking" : game.status;
    root.dataset.yourTurn = String(Boolean(offer));
  }

  function searchPanel() {
    if (!elements.showSearch.checked) return [h("p", { class: "muted" }, "Switch it on to see the moves the bot weighed and how it rates its chances.")];
    if (!game.last) return [h("p", { class: "muted" }, "The bot has not moved yet.")];
    const botSeats = game.last.actors.filter((seat) => !game.seats[seat]?.person);
    const frame = { ...game.last, actors: botSeats, actions: botSeats.map((seat) => game.last.actions[game.last.actors.indexOf(seat)]), insights: botSeats.map((seat) => game.last.insights?.[game.last.actors.indexOf(seat)]) };
    return botSeats.length ? searchSummary(frame, (seat) => seatName(game, seat), renderer.describeMove) : [h("p", { class: "muted" }, "The bot did not move last.")];
  }

  /** The person's legal moves: action key -> board terms (games of one action head). */
  function choices() {
    const [indices, ...others] = game.legal;
    if (others.length) return null; // several heads: not offered by hand yet
    return new Map(indices.map((index) => [String(index), game.view.moves[String(index)]]).filter(([, at]) => at !== undefined));
  }

  async function send(request) {
    busy = true;
    draw();
    try {
      game = await request();
    } catch (error) {
      if (!(error instanceof ReadableError)) console.error(error);
      if (error?.code === "moved_on") game = await getJson(`/api/v1/human-games/${game.id}`).catch(() => game);
      busy = false;
      draw();
      elements.status.textContent = `${error instanceof ReadableError ? error.message : "The move could not be sent."} ${status()}`;
      return;
    }
    busy = false;
    draw();
  }

  function move(actionKey) {
    const action = actionKey.split(",").map(Number);
    send(() => postJson(`/api/v1/human-games/${game.id}/moves`, { action, ply: game.ply }, { "X-Play-Key": key }));
  }

  elements.showSearch.addEventListener("change", draw);
  // Resigning takes a second click within RESIGN_CONFIRM_MS, so a stray click loses nothing.
  let resignTimer = null;
  elements.resign.addEventListener("click", () => {
    if (resignTimer === null) {
      elements.resign.textContent = "Click again to resign";
      resignTimer = setTimeout(() => {
        resignTimer = null;
        elements.resign.textContent = "Resign";
      }, RESIGN_CONFIRM_MS);
      return;
    }
    clearTimeout(resignTimer);
    resignTimer = null;
    elements.resign.textContent = "Resign";
    send(() => postJson(`/api/v1/human-games/${game.id}/resign`, {}, { "X-Play-Key": key }));
  });
  elements.newGame.addEventListener("click", async () => {
    elements.newGame.disabled = true;
    try {
      await startGame(game.bot.id, game.human_seat);
    } catch (error) {
      elements.newGame.disabled = false;
      elements.status.textContent = error instanceof ReadableError ? error.message : "A new game could not be started.";
    }
  });
  draw();
  root.dataset.ready = "true";
}

async function main() {
  const data = pageData();
  try {
    play(data.game, await loadRenderer(data.game.game));
  } catch (error) {
    if (!(error instanceof ReadableError)) console.error(error);
    elements.status.textContent = `The game cannot be shown: ${error instanceof ReadableError ? error.message : "a bug in Arena."}`;
    root.dataset.ready = "error";
  }
}

main();
