// Spring Challenge 2021: the 37 hexes of view.cells (cube coordinates [x, y, z], pointy-top,
// direction 0 = east to the right, z = -3 on top, as the engine's text picture), coloured by
// richness (0 = a hole, crossed out), the trees by owner (P1 blue circles, P2 orange squares: the
// shape tells them apart without colour) and size (0 = a seed .. 3, also written in the tree),
// dormant trees dashed with a "z", today's shadows hatched with their size, the sun opposite the
// way shadows fall, both players' sun and score, the day, the nutrients and the day's actions.
//
// A move (`at`, a value of view.moves) is {cell: 0..36 or null for WAIT, commands: {seat: text}}:
// one index means different commands for the two seats, so a move is named with its seat. The
// heat map gives each seat one half of a hex (P1 the left half, P2 the right one, a gap between)
// and of the WAIT box, in the seat's colour, shaded by the share of its search. See player.js for the renderer contract.

import { svg, percent, setAttributes } from "../dom.js";
import { oneClickPicker } from "../picking.js";

const RADIUS = 44; // a hex's centre-to-corner distance
const WIDTH = 700;
const HEIGHT = 800;
const CENTRE = { x: WIDTH / 2, y: 312 };
const SUN_DISTANCE = 296; // from the board's centre: beyond its outermost corners (273), clear of the cards
const TREE_RADIUS = [6, 10, 14, 18]; // by size; a square of the same half-width for P2
const TREE_RAISE = 4; // trees sit a little above the centre, leaving room for the heat labels
const SEAT_SIDE = [-1, 1]; // P1's half of a hex is on the left, P2's on the right
const HALF_GAP = 2; // between the two halves of a hex both seats searched, so they read as two
const SHOWN_FRAMES = 6; // of the day's actions; earlier ones are counted
const MAX_COMMAND_CHARS = 34;
const DIRECTION_NAMES = ["east", "north-east", "north-west", "west", "south-west", "south-east"];
const SHAPE_NAMES = ["blue circles", "orange squares"];

/** The pixel centre of cube coordinates [x, y, z] (y is implied by x + y + z = 0). */
function pixel([x, , z]) {
  return { x: CENTRE.x + Math.sqrt(3) * RADIUS * (x + z / 2), y: CENTRE.y + 1.5 * RADIUS * z };
}

/** The unit vector of direction `direction` (0..5) on screen. */
function directionVector(direction) {
  const offsets = [[1, -1, 0], [1, 0, -1], [0, 1, -1], [-1, 1, 0], [-1, 0, 1], [0, -1, 1]];
  const { x, y } = pixel(offsets[direction]);
  const length = Math.hypot(x - CENTRE.x, y - CENTRE.y);
  return { x: (x - CENTRE.x) / length, y: (y - CENTRE.y) / length };
}

/** The corners of a pointy-top hex around (cx, cy), `radius` from the centre, clockwise from the top. */
function corners(cx, cy, radius = RADIUS) {
  return Array.from({ length: 6 }, (_, index) => {
    const angle = (Math.PI / 3) * index - Math.PI / 2;
    return [cx + radius * Math.cos(angle), cy + radius * Math.sin(angle)];
  });
}

const pointList = (points) => points.map(([x, y]) => `${x.toFixed(1)},${y.toFixed(1)}`).join(" ");

/** The half of a hex on `side` (-1 left, 1 right): the top and bottom corners and the three on that side. */
function halfHex(cx, cy, side) {
  const [[topX, topY], upperRight, lowerRight, [bottomX, bottomY], lowerLeft, upperLeft] = corners(cx, cy, RADIUS - 3);
  const top = [topX + side * HALF_GAP, topY];
  const bottom = [bottomX + side * HALF_GAP, bottomY];
  return pointList(side < 0 ? [top, bottom, lowerLeft, upperLeft] : [top, upperRight, lowerRight, bottom]);
}

/** What the engine's text picture writes for a cell: . empty, # hole, else A/B, size, z dormant, ~ spooky. */
function cellText(cell) {
  if (!cell.tree) return cell.richness ? "." : "#";
  const { owner, size, dormant, spooky } = cell.tree;
  return `${"AB"[owner]}${size}${dormant ? "z" : ""}${spooky ? "~" : ""}`;
}

export function pieceName(seat) {
  return `trees as ${SHAPE_NAMES[seat]}`;
}

export function describeMove(at, seat) {
  const command = at.commands[seat] ?? Object.values(at.commands)[0];
  return command ?? (at.cell === null ? "WAIT" : `cell ${at.cell}`);
}

export function caption(view) {
  const [first, second] = view.players;
  const standing = `P1 sun ${first.sun}, score ${first.score} · P2 sun ${second.sun}, score ${second.score}`;
  if (view.ending) return `Game over: ${view.ending} · ${standing}`;
  const actors = view.to_move.map((seat) => `P${seat + 1}`).join(" and ");
  return `Day ${view.day} of 0..${view.max_rounds - 1} · shadows fall ${DIRECTION_NAMES[view.sun_direction]} · nutrients ${view.nutrients} · ${actors} to act`;
}

/** A tree of `owner` and `size` centred at (cx, cy): a circle for P1, a square for P2. */
function treeShape(owner, size, cx, cy) {
  const radius = TREE_RADIUS[size];
  return owner === 0
    ? svg("circle", { cx, cy, r: radius })
    : svg("rect", { x: cx - radius, y: cy - radius, width: 2 * radius, height: 2 * radius, rx: 2 });
}

function drawTree(group, cell, cx, cy) {
  const { owner, size, dormant, spooky } = cell.tree;
  const y = cy - TREE_RAISE;
  const shape = treeShape(owner, size, cx, y);
  setAttributes(shape, { class: `tree seat${owner}${dormant ? " dormant" : ""}${spooky ? " spooky" : ""}` });
  group.append(shape);
  if (size > 0) group.append(svg("text", { x: cx, y, class: "tree-size" }, size));
  if (dormant) group.append(svg("text", { x: cx + TREE_RADIUS[size] + 3, y: y - TREE_RADIUS[size], class: "dormant-mark" }, "z"));
}

function drawCell(group, cell) {
  const { x: cx, y: cy } = pixel(cell.cube);
  setAttributes(group, { "data-cell": cell.index, "data-piece": cellText(cell), "data-richness": cell.richness, "data-shadow": cell.shadow });
  const title = [`cell ${cell.index}`, cell.richness ? `richness ${cell.richness}` : "unusable", cell.shadow ? `shadow of size ${cell.shadow} today` : "in the sun today"];
  if (cell.tree) {
    const { owner, size, dormant, spooky } = cell.tree;
    title.push(`P${owner + 1} ${size ? `tree of size ${size}` : "seed"}${dormant ? ", dormant" : ""}${spooky ? ", gathers no sun today" : ""}`);
  }
  const children = [
    svg("title", {}, title.join(" · ")),
    svg("polygon", { points: pointList(corners(cx, cy)), class: `hex richness${cell.richness}` }),
  ];
  if (!cell.richness) {
    const d = RADIUS * 0.45;
    children.push(svg("path", { d: `M${cx - d},${cy - d}L${cx + d},${cy + d}M${cx + d},${cy - d}L${cx - d},${cy + d}`, class: "hole-cross" }));
  }
  const labelY = cy - RADIUS + 17; // the cell's number, then today's shadow size beside it
  if (cell.shadow) {
    children.push(
      svg("polygon", { points: pointList(corners(cx, cy, RADIUS - 1)), class: `shade shade${cell.shadow}` }),
      svg("text", { x: cx + 12, y: labelY, class: "shade-label" }, `☁${cell.shadow}`),
    );
  }
  children.push(svg("text", { x: cell.shadow ? cx - 9 : cx, y: labelY, class: "cell-number" }, cell.index));
  group.replaceChildren(...children);
  if (cell.tree) drawTree(group, cell, cx, cy);
}

const CARD_WIDTH = 162; // the corners beside the board's top and bottom rows, clear of the sun

function playerCard(seat) {
  const x = seat === 0 ? 8 : WIDTH - 8 - CARD_WIDTH;
  const group = svg("g", { class: `player-card seat${seat}`, "data-seat": seat });
  const icon = treeShape(seat, 1, x + 17, 28);
  setAttributes(icon, { class: `tree seat${seat}` });
  const lines = [svg("text", { x: x + 34, y: 34, class: "card-title" }), svg("text", { x: x + 10, y: 60 }), svg("text", { x: x + 10, y: 82, class: "card-note" })];
  group.append(svg("rect", { x, y: 6, width: CARD_WIDTH, height: 86, rx: 8, class: "card" }), icon, ...lines);
  return {
    group,
    draw(player, finalScore) {
      lines[0].textContent = `P${seat + 1} score ${player.score}`;
      lines[1].textContent = `sun ${player.sun}${player.waiting ? " · waiting" : ""}`;
      lines[2].textContent = finalScore === undefined ? `gathered ${player.gathered}` : `final score ${finalScore}`;
      setAttributes(group, { "data-score": player.score, "data-sun": player.sun, "data-waiting": player.waiting });
    },
  };
}

function dayCard() {
  const group = svg("g", { class: "day-card" });
  const lines = [svg("text", { x: 18, y: 580, class: "card-title" }), svg("text", { x: 18, y: 606 }), svg("text", { x: 18, y: 630, class: "card-note" })];
  group.append(svg("rect", { x: 8, y: 554, width: CARD_WIDTH, height: 86, rx: 8, class: "card" }), ...lines);
  return {
    group,
    draw(view) {
      lines[0].textContent = `Day ${view.day} of 0..${view.max_rounds - 1}`;
      lines[1].textContent = `nutrients ${view.nutrients}`;
      lines[2].textContent = `shade → ${DIRECTION_NAMES[view.sun_direction]}`;
    },
  };
}

function sun() {
  const group = svg("g", { class: "sun" });
  const rays = Array.from({ length: 8 }, (_, index) => {
    const angle = (Math.PI / 4) * index;
    return svg("line", { x1: 20 * Math.cos(angle), y1: 20 * Math.sin(angle), x2: 27 * Math.cos(angle), y2: 27 * Math.sin(angle), class: "sun-ray" });
  });
  const arrow = svg("line", { x1: 0, y1: 0, x2: 0, y2: 0, class: "sun-arrow", "marker-end": "url(#spring-sun-arrow)" });
  group.append(arrow, ...rays, svg("circle", { cx: 0, cy: 0, r: 16, class: "sun-disc" }), svg("title", {}, "the sun: shadows fall away from it"));
  return {
    group,
    draw(direction) {
      const towards = directionVector(direction);
      setAttributes(group, { transform: `translate(${(CENTRE.x - SUN_DISTANCE * towards.x).toFixed(1)} ${(CENTRE.y - SUN_DISTANCE * towards.y).toFixed(1)})`, "data-direction": direction });
      setAttributes(arrow, { x1: (30 * towards.x).toFixed(1), y1: (30 * towards.y).toFixed(1), x2: (52 * towards.x).toFixed(1), y2: (52 * towards.y).toFixed(1) });
    },
  };
}

const WAIT_BOX = { x: WIDTH - 8 - CARD_WIDTH, y: 554, width: CARD_WIDTH, height: 86 };

function waitBox() {
  const { x, y, width, height } = WAIT_BOX;
  const heat = [0, 1].map((seat) => svg("rect", { x: x + (seat * width) / 2 + 3, y: y + 3, width: width / 2 - 6, height: height - 6, rx: 6, class: `heat seat${seat}` }));
  const labels = [0, 1].map((seat) => svg("text", { x: x + ((2 * seat + 1) * width) / 4, y: y + height - 12, class: `heat-label seat${seat}` }));
  const group = svg("g", { class: "wait-box", "data-cell": "wait" });
  group.append(svg("rect", { x, y, width, height, rx: 8, class: "card" }), ...heat, svg("text", { x: x + width / 2, y: y + 28, class: "card-title wait-title" }, "WAIT"), ...labels);
  return { group, heat, labels, centre: (seat) => ({ x: x + ((2 * seat + 1) * width) / 4, y: y + height / 2 }) };
}

function shorten(text) {
  return text.length > MAX_COMMAND_CHARS ? `${text.slice(0, MAX_COMMAND_CHARS - 1)}…` : text;
}

function dayActions() {
  const group = svg("g", { class: "day-actions" });
  return {
    group,
    draw({ day, frames }) {
      const top = 672;
      const heading = svg("text", { x: 16, y: top, class: "card-title" }, frames.length ? `Day ${day}'s actions so far` : "No actions yet today");
      const hidden = Math.max(0, frames.length - SHOWN_FRAMES);
      const rows = frames.slice(hidden).flatMap((commands, index) => {
        const y = top + 21 * (index + 1);
        return [
          svg("text", { x: 16, y, class: "frame-number" }, `${hidden + index + 1}.`),
          ...commands.map((command, seat) =>
            svg("text", { x: 50 + seat * 330, y, class: `command seat${seat}`, "data-seat": seat }, `P${seat + 1} ${command ? shorten(command) : "–"}`, svg("title", {}, command || "did not act (waiting)")),
          ),
        ];
      });
      const earlier = hidden ? [svg("text", { x: WIDTH - 16, y: top, class: "card-note earlier" }, `${hidden} earlier frame${hidden > 1 ? "s" : ""} not shown`)] : [];
      group.replaceChildren(heading, ...earlier, ...rows);
      group.dataset.frames = frames.length;
    },
  };
}

/** The seat's shares of its search per cell ("wait" for WAIT), and each seat's largest share. */
function sharesBySeat(heat) {
  const shares = [new Map(), new Map()];
  for (const { at, share, seat } of heat) {
    const key = at.cell ?? "wait";
    shares[seat].set(key, (shares[seat].get(key) ?? 0) + share);
  }
  return shares.map((bySeat) => ({ bySeat, top: Math.max(0, ...bySeat.values()) }));
}

const heatOpacity = (share, top) => (0.15 + (0.6 * share) / top).toFixed(3);

export function createBoard(container) {
  const root = svg("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, class: "board-svg spring2021", role: "img", "aria-label": "Spring Challenge 2021 board" });
  root.append(
    svg(
      "defs",
      {},
      svg("marker", { id: "spring-sun-arrow", viewBox: "0 0 10 10", refX: 8, refY: 5, markerWidth: 4, markerHeight: 4, orient: "auto-start-reverse" }, svg("path", { d: "M0,0 L10,5 L0,10 z", class: "sun-arrow-head" })),
      svg("marker", { id: "spring-seed-arrow", viewBox: "0 0 10 10", refX: 8, refY: 5, markerWidth: 4, markerHeight: 4, orient: "auto-start-reverse" }, svg("path", { d: "M0,0 L10,5 L0,10 z", class: "seed-arrow-head" })),
      svg("pattern", { id: "spring-hatch", width: 7, height: 7, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" }, svg("line", { x1: 0, y1: 0, x2: 0, y2: 7, class: "hatch-line" })),
    ),
  );
  const cells = svg("g", { class: "cells" });
  const heat = svg("g", { class: "heat-layer" });
  const marks = svg("g", { class: "played" });
  const cards = [playerCard(0), playerCard(1)];
  const day = dayCard();
  const theSun = sun();
  const wait = waitBox();
  const actions = dayActions();
  root.append(cells, heat, marks, theSun.group, ...cards.map((card) => card.group), day.group, wait.group, actions.group);
  container.replaceChildren(root);
  let centres = [];

  return {
    draw(view, overlay) {
      centres = view.cells.map((cell) => pixel(cell.cube));
      if (cells.childElementCount !== view.cells.length) cells.replaceChildren(...view.cells.map(() => svg("g", { class: "cell" })));
      view.cells.forEach((cell, index) => drawCell(cells.children[index], cell));
      cards.forEach((card, seat) => card.draw(view.players[seat], view.final_scores?.[seat]));
      day.draw(view);
      theSun.draw(view.sun_direction);
      actions.draw(view.day_actions);
      setAttributes(root, { "data-day": view.day, "data-nutrients": view.nutrients, "data-sun-direction": view.sun_direction });
      drawHeat(heat, wait, centres, overlay?.heat ?? []);
      marks.replaceChildren(...(overlay?.played ?? []).flatMap(({ at, seat }) => playedMark(at, seat, centres, wait)));
    },
    pick: oneClickPicker(root, (at) => String(at.cell ?? "wait")), // a cell, or the WAIT box
  };
}

function drawHeat(layer, wait, centres, moves) {
  const seats = sharesBySeat(moves);
  const shapes = [];
  seats.forEach(({ bySeat, top }, seat) => {
    const waitShare = bySeat.get("wait") ?? 0;
    const visible = waitShare > 0 && top > 0;
    setAttributes(wait.heat[seat], { "fill-opacity": visible ? heatOpacity(waitShare, top) : 0, "data-heat": visible ? "wait" : null, "data-seat": visible ? seat : null, "data-share": visible ? waitShare : null });
    wait.labels[seat].textContent = visible ? `P${seat + 1} ${percent(waitShare)}` : "";
    for (const [cell, share] of bySeat) {
      if (cell === "wait" || !(share > 0) || !centres[cell]) continue;
      const { x, y } = centres[cell];
      const side = SEAT_SIDE[seat];
      shapes.push(
        svg("polygon", { points: halfHex(x, y, side), class: `heat seat${seat}`, "fill-opacity": heatOpacity(share, top), "data-heat": cell, "data-seat": seat, "data-share": share }),
        svg("text", { x: x + side * 16, y: y + 27, class: `heat-label seat${seat}` }, percent(share)),
      );
    }
  });
  layer.replaceChildren(...shapes);
}

/** The mark of a move played from this frame: its cell outlined in the seat's style (P1 solid,
 *  P2 dashed), a seed's throw drawn from its source, WAIT outlined in its box. */
function playedMark(at, seat, centres, wait) {
  if (at.cell === null) {
    const { x, y } = wait.centre(seat);
    return [svg("rect", { x: x - WAIT_BOX.width / 4 + 2, y: y - WAIT_BOX.height / 2 + 2, width: WAIT_BOX.width / 2 - 4, height: WAIT_BOX.height - 4, rx: 6, class: `played-ring seat${seat}`, "data-played": "wait", "data-seat": seat })];
  }
  const { x, y } = centres[at.cell];
  const marks = [svg("polygon", { points: pointList(corners(x, y, RADIUS - 4)), class: `played-ring seat${seat}`, "data-played": at.cell, "data-seat": seat })];
  const seed = /^SEED (\d+) (\d+)$/.exec(at.commands[seat] ?? "");
  const source = seed && centres[Number(seed[1])];
  if (source) {
    const dx = x - source.x;
    const dy = y - source.y;
    const length = Math.hypot(dx, dy) || 1;
    const inset = RADIUS * 0.45;
    marks.push(svg("line", { x1: source.x + (dx / length) * inset, y1: source.y + (dy / length) * inset, x2: x - (dx / length) * inset, y2: y - (dy / length) * inset, class: `seed-arrow seat${seat}`, "marker-end": "url(#spring-seed-arrow)" }));
  }
  return marks;
}
