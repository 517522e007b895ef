// Bobail: a 5x5 board from view.board (25 characters, row 0 on top: '0' / '1' the pawns of P1 /
// P2, 'B' the bobail, '.' empty). Squares are numbered 1..25 as in the game's text picture; moves
// are [from, to] squares. The heat map sums the visit shares of the moves on their DESTINATION
// square (several pawns may reach one square). A person moves in two clicks: the piece (the
// bobail is picked for them), then its destination. See player.js for the renderer contract.

import { svg, percent, setAttributes } from "../dom.js";
import { pickCells } from "../picking.js";

const SIZE = 5;
const CELL = 100;
const MARGIN = 6;
const SPAN = SIZE * CELL + 2 * MARGIN;

const corner = (square) => {
  const index = square - 1;
  return { x: MARGIN + (index % SIZE) * CELL, y: MARGIN + Math.floor(index / SIZE) * CELL };
};
const centre = (square) => {
  const { x, y } = corner(square);
  return { x: x + CELL / 2, y: y + CELL / 2 };
};

export function pieceName(seat) {
  return seat === 0 ? "blue pawns, home row on top" : "orange pawns, home row at the bottom";
}

export function describeMove([from, to]) {
  return `${from}→${to}`;
}

export function caption(view) {
  if (view.ending) return `Game over: ${view.winner === null ? "draw" : `P${view.winner + 1} wins`} (${view.ending})`;
  const [seat] = view.to_move;
  return `Half-move ${view.half_moves + 1}: P${seat + 1} ${view.phase === "pawn" ? "slides a pawn" : "moves the bobail"}`;
}

export function createBoard(container) {
  const cells = [];
  const root = svg("svg", { viewBox: `0 0 ${SPAN} ${SPAN}`, class: "board-svg bobail", role: "img", "aria-label": "Bobail board" });
  root.append(
    svg("defs", {}, svg("marker", { id: "bobail-arrow", viewBox: "0 0 10 10", refX: 8, refY: 5, markerWidth: 5, markerHeight: 5, orient: "auto-start-reverse" }, svg("path", { d: "M0,0 L10,5 L0,10 z", class: "arrow-head" }))),
  );
  for (let square = 1; square <= SIZE * SIZE; square += 1) {
    const { x, y } = corner(square);
    const { x: cx, y: cy } = centre(square);
    const row = Math.floor((square - 1) / SIZE);
    const cell = {
      group: svg("g", { class: "cell", "data-cell": square - 1 }),
      square: svg("rect", { x, y, width: CELL, height: CELL, class: `square${row === 0 ? " home0" : row === SIZE - 1 ? " home1" : ""}` }),
      heat: svg("rect", { x: x + 4, y: y + 4, width: CELL - 8, height: CELL - 8, rx: 10, class: "heat" }),
      piece: svg("circle", { cx, cy, r: 32, class: "piece" }),
      label: svg("text", { x: x + 8, y: y + 20, class: "square-number" }, square),
      share: svg("text", { x: x + CELL - 8, y: y + CELL - 10, class: "heat-label" }),
    };
    cell.group.append(cell.square, cell.heat, cell.piece, cell.label, cell.share);
    root.append(cell.group);
    cells.push(cell);
  }
  const arrows = svg("g", { class: "played" });
  root.append(arrows);
  container.replaceChildren(root);
  let undo = () => {};

  return {
    draw(view, overlay) {
      const [from, to] = view.last_move ?? [null, null];
      const shares = new Map();
      for (const { at, share } of overlay?.heat ?? []) shares.set(at[1], (shares.get(at[1]) ?? 0) + share);
      const top = Math.max(0, ...shares.values());
      cells.forEach((cell, index) => {
        const square = index + 1;
        const piece = view.board[index];
        cell.group.dataset.piece = piece;
        cell.square.classList.toggle("last-from", square === from);
        cell.square.classList.toggle("last-to", square === to);
        setAttributes(cell.piece, { class: { 0: "piece pawn seat0", 1: "piece pawn seat1", B: "piece bobail" }[piece] ?? "piece empty" });
        const share = shares.get(square) ?? 0;
        const visible = share > 0 && top > 0;
        setAttributes(cell.heat, { "fill-opacity": visible ? (0.15 + (0.6 * share) / top).toFixed(3) : 0, "data-heat": visible ? square : null, "data-share": visible ? share : null });
        cell.share.textContent = visible ? percent(share) : "";
      });
      arrows.replaceChildren(
        ...(overlay?.played ?? []).map(({ at: [start, end] }) => {
          const a = centre(start);
          const b = centre(end);
          return svg("line", { x1: a.x, y1: a.y, x2: b.x, y2: b.y, class: "played-arrow", "marker-end": "url(#bobail-arrow)" });
        }),
      );
    },
    pick(choices, choose) {
      undo();
      undo = () => {};
      if (!choices) return;
      const bySource = new Map(); // source square -> Map(destination cell -> action key)
      for (const [key, [from, to]] of choices) {
        if (!bySource.has(from)) bySource.set(from, new Map());
        bySource.get(from).set(String(to - 1), key);
      }
      // Sources are offered as numbers (their square), destinations as action keys (strings).
      const offer = (from) => {
        undo();
        const targets = new Map([...bySource.keys()].map((source) => [String(source - 1), source]));
        for (const [cell, key] of from === null ? [] : bySource.get(from)) targets.set(cell, key);
        undo = pickCells(root, targets, (value) => (typeof value === "string" ? choose(value) : offer(value)));
        if (from !== null) cells[from - 1].group.classList.add("picked");
      };
      offer(bySource.size === 1 ? [...bySource.keys()][0] : null);
    },
  };
}
