// Pente: a 19x19 goban from view.board (361 characters, point y * 19 + x: '.' empty, '1' a stone
// of P1 (black), '2' of P2 (white)), the captured pairs, the latest stone marked. Moves are
// points [x, y]; the heat map colours the searched points; a person picks a point by clicking it. Columns a..s and rows 0..18 follow
// the game's text picture. See player.js for the renderer contract.

import { svg, percent, setAttributes } from "../dom.js";
import { oneClickPicker } from "../picking.js";

const SIZE = 19;
const STEP = 30;
const MARGIN = 36;
const SPAN = 2 * MARGIN + (SIZE - 1) * STEP;
const COLUMNS = "abcdefghijklmnopqrs";
const STAR_POINTS = [3, 9, 15];

const position = (coordinate) => MARGIN + coordinate * STEP;

export function pieceName(seat) {
  return seat === 0 ? "black stones" : "white stones";
}

export function pieceColour(seat) {
  return seat === 0 ? "black" : "white";
}

export function describeMove([x, y]) {
  return `${COLUMNS[x]}${y}`;
}

export function caption(view) {
  const [black, white] = view.captures;
  const captured = `Captured pairs: P1 (black) ${black} · P2 (white) ${white}`;
  if (view.ending) return `${captured} · game over: ${view.winner === null ? "draw" : `P${view.winner + 1} wins`} (${view.ending})`;
  return `${captured} · move ${view.ply + 1}: P${view.to_move[0] + 1} to play`;
}

/** The line of five or more through the last stone that ended the game "five in a row": its two
 *  end points [[x, y], [x, y]] and its length, or null (any other position). */
function winningLine(view) {
  if (view.ending !== "five in a row" || !view.last_move) return null;
  const [x0, y0] = view.last_move;
  const piece = view.board[y0 * SIZE + x0];
  const own = (x, y) => x >= 0 && x < SIZE && y >= 0 && y < SIZE && view.board[y * SIZE + x] === piece;
  const furthest = (dx, dy) => {
    let [x, y] = [x0, y0];
    while (own(x + dx, y + dy)) [x, y] = [x + dx, y + dy];
    return [x, y];
  };
  for (const [dx, dy] of [[1, 0], [0, 1], [1, 1], [1, -1]]) {
    const ends = [furthest(-dx, -dy), furthest(dx, dy)];
    const length = Math.max(Math.abs(ends[1][0] - ends[0][0]), Math.abs(ends[1][1] - ends[0][1])) + 1;
    if (length >= 5) return { ends, length };
  }
  return null;
}

function grid() {
  const group = svg("g", { class: "grid-lines" });
  const end = position(SIZE - 1);
  for (let index = 0; index < SIZE; index += 1) {
    const at = position(index);
    group.append(
      svg("line", { x1: MARGIN, x2: end, y1: at, y2: at }),
      svg("line", { x1: at, x2: at, y1: MARGIN, y2: end }),
      svg("text", { x: at, y: MARGIN - 16, class: "coordinate" }, COLUMNS[index]),
      svg("text", { x: MARGIN - 12, y: at, class: "coordinate row" }, index),
    );
  }
  for (const x of STAR_POINTS) {
    for (const y of STAR_POINTS) group.append(svg("circle", { cx: position(x), cy: position(y), r: 3.5, class: "star-point" }));
  }
  return group;
}

export function createBoard(container) {
  const root = svg("svg", { viewBox: `0 0 ${SPAN} ${SPAN}`, class: "board-svg pente", role: "img", "aria-label": "Pente board" });
  const heat = svg("g", { class: "heat-layer" });
  const stones = svg("g", { class: "stones" });
  const marks = svg("g", { class: "marks" });
  const points = [];
  for (let point = 0; point < SIZE * SIZE; point += 1) {
    const stone = svg("circle", { cx: position(point % SIZE), cy: position(Math.floor(point / SIZE)), r: 13.5, class: "stone empty", "data-cell": point, "data-piece": "." });
    points.push(stone);
    stones.append(stone);
  }
  root.append(svg("rect", { x: 0, y: 0, width: SPAN, height: SPAN, rx: 8, class: "wood" }), grid(), heat, stones, marks);
  container.replaceChildren(root);

  return {
    draw(view, overlay) {
      points.forEach((stone, point) => {
        const piece = view.board[point];
        if (stone.dataset.piece === piece) return;
        setAttributes(stone, { "data-piece": piece, class: { 1: "stone black", 2: "stone white" }[piece] ?? "stone empty" });
      });
      const shares = new Map();
      for (const { at, share } of overlay?.heat ?? []) {
        const key = at[1] * SIZE + at[0];
        shares.set(key, (shares.get(key) ?? 0) + share);
      }
      const top = Math.max(0, ...shares.values());
      heat.replaceChildren(
        ...[...shares].filter(([, share]) => share > 0).flatMap(([point, share]) => {
          const cx = position(point % SIZE);
          const cy = position(Math.floor(point / SIZE));
          return [
            svg("circle", { cx, cy, r: 14, class: "heat", "fill-opacity": (0.2 + (0.65 * share) / top).toFixed(3), "data-heat": point, "data-share": share }),
            svg("text", { x: cx, y: cy, class: "heat-label" }, percent(share)),
          ];
        }),
      );
      const latest = view.last_move && svg("circle", { cx: position(view.last_move[0]), cy: position(view.last_move[1]), r: 5, class: `last-move on-${view.board[view.last_move[1] * SIZE + view.last_move[0]]}` });
      const played = (overlay?.played ?? []).map(({ at: [x, y] }) => svg("circle", { cx: position(x), cy: position(y), r: 15, class: "played-ring" }));
      const five = winningLine(view);
      const struck = five && svg("line", { x1: position(five.ends[0][0]), y1: position(five.ends[0][1]), x2: position(five.ends[1][0]), y2: position(five.ends[1][1]), class: "winning-line", "data-length": five.length });
      marks.replaceChildren(...[struck, latest, ...played].filter(Boolean));
    },
    pick: oneClickPicker(stones, ([x, y]) => String(y * SIZE + x)),
  };
}
