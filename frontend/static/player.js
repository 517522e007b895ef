// The one replay player for every game. It loads the game's frames (each position re-played by
// the server through the engine, with the moves and the search behind them), picks the game's
// renderer module (renderers/<game>.js), and steps through the positions: buttons, a scrub slider,
// play/pause at a chosen speed, the keyboard (← → space Home End), and #ply=N in the URL.
//
// On a game in progress (the live page: `live` in its page data, the first answer of
// GET /api/v1/live/{pairing}/{index}) it polls for the frames played since, appends them, follows
// the game while the viewer is at its latest position, and once the game is recorded goes on to its
// replay at the same position.
//
// A renderer module exports:
//   createBoard(container, frames?) -> {draw(view, overlay, last), pick?(choices, choose, seat)}:
//       `frames`, in a replay, are all its frames (for what one view does not hold: trails,
//       per-head insights; each view drawn is then one of theirs, the same object); `draw` draws
//       a frame's `view`; `overlay` is null (heat map off) or {heat: [{at, share, prior, seat}],
//       played: [{at, seat}]}, `at` in the view's board terms (the values of `view.moves`), `seat`
//       the player it is a move of; `last` are the moves that led to this position, [{at, seat}] in
//       the previous view's terms ([] at the start), for boards that show what a move did (Smash
//       the Code's chains). `pick`, for games a person can play (play.js), makes the board offer
//       `choices` (a Map of action key -> `at`, the legal moves of the person, who plays `seat`)
//       after a draw and calls `choose(key)` with the one clicked; pick(null) offers nothing
//   describeAction?(action, seat) -> string: an action (head indices) of `seat` for people, for
//       games whose frames keep no board terms for their actions (CSB's four heads)
//   describeMove(at, seat) -> string: a move of `seat` for people (in a simultaneous game one
//       action may mean different moves for the two seats)
//   pieceName(seat) -> string: what the seat plays with ("black stones")
//   pieceColour?(seat) -> "black" | "white": the colour of the seat's pieces, for games whose
//       pieces are not in the seats' colours (Pente's stones); the header's swatches show it
//   caption(view) -> string: a line under the board (captures, phase...)

import { h, getJson, pageData, ReadableError } from "./dom.js";
import { labelSeats, loadRenderer } from "./renderer.js";
import { describeEnd } from "./gametable.js";
import { insightHeading, playedMoves, searchSummary, searchedMoves, valuePlot } from "./overlay.js";

const BASE_STEP_MS = 700; // one step per this long at 1x
const URL_DELAY_MS = 250; // #ply=N follows the player once it rests: browsers throttle rapid history updates

const root = document.getElementById("replay");
const controls = {
  scrub: document.getElementById("scrub"),
  speed: document.getElementById("speed"),
  heat: document.getElementById("show-heat"),
  play: root.querySelector("[data-go=play]"),
  ply: document.getElementById("ply"),
};

function requestedPly() {
  const match = /(?:^#|&)ply=(\d+)/.exec(location.hash);
  return match ? Number(match[1]) : null;
}

/** Starts the player on `replay` (its `frames`, `seats`, `opening_length`); `live` while the game
 *  is still played (its last frame is then the position to play); at its last position when
 *  `atEnd` (a game in progress), else at its first (or #ply=N). Returns {extend, ply}:
 *  `extend(since, frames, playing)` replaces the frames from `since` on (a game in progress moved
 *  on; `playing`: it still is), `ply()` is the position shown. */
function start(replay, renderer, { live = false, atEnd = false } = {}) {
  let frames = replay.frames;
  let last = frames.length - 1;
  let board = null;
  let values = null;
  const seatName = (seat) => `P${seat + 1} ${replay.seats[seat]?.name ?? ""}`.trim();
  let ply = 0;
  let timer = null;
  let urlTimer = null;

  function build() {
    board = renderer.createBoard(document.getElementById("board"), frames);
    values = valuePlot(document.getElementById("values"), frames, seatName, (at) => show(at));
    controls.scrub.max = last;
  }

  labelSeats(renderer);
  build();

  function describePosition(frame) {
    const where = `Position ${frame.ply} of ${last}`;
    if (!frame.actions && live) return `${where} · ${frame.actors.map(seatName).join(" and ")} to move now`;
    if (!frame.actions) return `${where} · final position`;
    const movers = frame.actors.map(seatName).join(" and ");
    const named = (seat, text) => (frame.actors.length > 1 ? `P${seat + 1} ` : "") + text;
    const inBoardTerms = playedMoves(frame).map(({ at, seat }) => named(seat, renderer.describeMove(at, seat)));
    const inHeads = renderer.describeAction ? frame.actions.map((action, index) => named(frame.actors[index], renderer.describeAction(action, frame.actors[index]))) : [];
    const moves = (inBoardTerms.length ? inBoardTerms : inHeads).join(", ");
    const opening = frame.ply < replay.opening_length ? " (imposed opening)" : "";
    return `${where} · ${movers} to move${moves ? `, plays ${moves}` : ""}${opening}`;
  }

  function show(target) {
    ply = Math.min(Math.max(Number.isFinite(target) ? Math.trunc(target) : 0, 0), last);
    const frame = frames[ply];
    const overlay = controls.heat.checked ? { heat: searchedMoves(frame), played: playedMoves(frame) } : null;
    board.draw(frame.view, overlay, ply > 0 ? playedMoves(frames[ply - 1]) : []);
    document.getElementById("board-caption").textContent = renderer.caption(frame.view);
    controls.scrub.value = ply;
    controls.ply.textContent = describePosition(frame);
    document.getElementById("search-heading").textContent = insightHeading(frame);
    const thinking = live && ply === last ? [h("p", { class: "muted" }, "Not played yet: the search shows once the move is made.")] : null;
    document.getElementById("search").replaceChildren(...(thinking ?? searchSummary(frame, seatName, renderer.describeMove, renderer.describeAction)));
    values.mark(ply);
    root.dataset.ply = ply;
    clearTimeout(urlTimer);
    urlTimer = setTimeout(() => history.replaceState(null, "", `#ply=${ply}`), URL_DELAY_MS);
    if (ply === last) pause();
  }

  function play() {
    if (ply === last) show(0);
    controls.play.classList.add("playing");
    controls.play.setAttribute("aria-label", "Pause");
    const tick = () => {
      show(ply + 1);
      if (timer !== null) timer = setTimeout(tick, BASE_STEP_MS / Number(controls.speed.value));
    };
    timer = setTimeout(tick, BASE_STEP_MS / Number(controls.speed.value));
  }

  function pause() {
    clearTimeout(timer);
    timer = null;
    controls.play.classList.remove("playing");
    controls.play.setAttribute("aria-label", "Play");
  }

  const actions = {
    first: () => show(0),
    back: () => show(ply - 1),
    next: () => show(ply + 1),
    last: () => show(last),
    play: () => (timer === null ? play() : pause()),
  };
  const keys = { ArrowLeft: "back", ArrowRight: "next", Home: "first", End: "last", " ": "play" };

  for (const button of root.querySelectorAll("[data-go]")) {
    button.addEventListener("click", () => actions[button.dataset.go]());
  }
  controls.scrub.addEventListener("input", () => show(Number(controls.scrub.value)));
  controls.heat.addEventListener("change", () => show(ply));
  document.addEventListener("keydown", (event) => {
    const target = event.target;
    const native = ["INPUT", "SELECT", "TEXTAREA"].includes(target.tagName) || (target.tagName === "BUTTON" && event.key === " ");
    if (native || event.altKey || event.ctrlKey || event.metaKey || !(event.key in keys)) return;
    event.preventDefault();
    actions[keys[event.key]]();
  });
  window.addEventListener("hashchange", () => {
    const wanted = requestedPly();
    if (wanted !== null && wanted !== ply) show(wanted);
  });
  show(requestedPly() ?? (atEnd ? last : 0));
  root.dataset.ready = "true";
  return {
    extend(since, news, playing) {
      const following = ply === last;
      frames = [...frames.slice(0, since), ...news];
      last = frames.length - 1;
      live = playing;
      build();
      show(following ? last : ply);
    },
    ply: () => ply,
  };
}

/** The result line of a finished game: the end's badge, who won, and how it ended. */
function showResult(replay, summary) {
  const end = describeEnd(summary);
  document.getElementById("result").replaceChildren(
    h("span", { class: `badge end-${end.kind}` }, end.label), " ", resultLine(replay), " · ", end.detail,
  );
}

function resultLine(replay) {
  const [first, second] = replay.returns;
  if (first === second) return "draw";
  const winner = first > second ? 0 : 1;
  return `P${winner + 1} ${replay.seats[winner].name} wins`;
}

/** Follows a game in progress: polls for the frames since the latest one held every `poll_ms`,
 *  and once the game is recorded goes on to its replay at the position shown. */
async function follow(data, player) {
  const badge = document.getElementById("live-badge");
  const line = document.getElementById("result");
  const report = (known) => {
    badge.dataset.status = known.status;
    badge.textContent = known.status === "over" ? "game over" : "live";
    if (known.status === "over") showResult(known, { end_reason: known.end_reason, forfeit_seat: known.forfeit?.player ?? null });
    else line.textContent = `Live: ${known.ply} steps played, updated ${new Date(known.updated_at).toLocaleTimeString()}.`;
  };
  let known = data.live;
  report(known);
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, data.poll_ms));
    if (document.hidden) continue;
    let news;
    try {
      news = await getJson(`${data.live_url}?since=${known.ply}`);
      if (news.status !== "recorded" && news.run !== known.run) news = await getJson(`${data.live_url}?since=0`); // played again from the start
    } catch (error) {
      if (!(error instanceof ReadableError)) throw error;
      if (error.code === "not_in_progress") {
        badge.dataset.status = "stopped";
        badge.textContent = "stopped";
        line.textContent = "This game is no longer being played: its pairing went back to the queue, to be played again from the start.";
        return;
      }
      line.textContent = `Live updates paused (${error.message}); retrying.`;
      continue;
    }
    if (news.status === "recorded") {
      location.replace(`/games/${news.game_id}#ply=${player.ply()}`);
      return;
    }
    if (news.run !== known.run || news.ply !== known.ply || news.status !== known.status) {
      player.extend(news.since, news.frames, news.status === "playing");
    }
    known = news;
    report(known);
  }
}

async function main() {
  const data = pageData();
  try {
    if (data.live) {
      const player = start(data.live, await loadRenderer(data.live.game), { live: data.live.status === "playing", atEnd: true });
      await follow(data, player);
      return;
    }
    const replay = await getJson(data.frames_url);
    start(replay, await loadRenderer(replay.game));
    showResult(replay, data.game);
  } catch (error) {
    // A readable error is shown as it is; anything else is a bug of this viewer, whose raw text
    // (a browser's TypeError...) would tell a visitor nothing: it goes to the console instead.
    if (!(error instanceof ReadableError)) console.error(error);
    const reason = error instanceof ReadableError ? error.message : "this viewer failed to draw it (a bug in Arena, not in the game).";
    controls.ply.textContent = `The replay cannot be shown: ${reason}`;
    root.dataset.ready = "error";
  }
}

main();
