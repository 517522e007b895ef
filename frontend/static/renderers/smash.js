// Smash the Code: the two wells side by side (view.wells, 12 rows of 6 cells, top row first: '.'
// empty, '0' a skull, '1'..'5' colours), each colour with its own mark inside (a circle, a square,
// a triangle, a diamond, a cross: colour is never the only clue), skulls grey with a face. Above
// each well its player's card (score, the nuisance meter towards the next line of 6 skulls, the
// last chain) and the pair falling now; between the wells the shared queue (this turn's pair and
// the next ones). Under the wells, per seat, the turn that led here: its chain step by step (pick
// a step to see the well as that step found it, the groups it cleared outlined, the skulls that
// went with them crossed, its score), and the skulls that arrived this turn outlined in red.
//
// A move (`at`, a value of view.moves) is a placement {column, rotation, shape, seats, outcomes},
// outcomes[seat] = {landing: [[row, col] of A, of B], steps, points, well} (the engine's
// render.placement_view). The heat map shades where each seat's searched placements would put the
// pair in its own well, with their share; a person places the pair by picking a column of their
// well (the preview shows where it lands and what it scores), the rotate button turns it.
// See player.js for the renderer contract; `draw` takes a third argument, `last`: the moves that
// led to this position ([{at, seat}] in the previous position's terms; [] at the start).

import { svg, percent, setAttributes } from "../dom.js";
import { pickCells } from "../picking.js";

const CELL = 34;
const ROWS = 12;
const COLUMNS = 6;
const WIDTH = 700;
const HEIGHT = 730;
const WELL_TOP = 166;
const WELL_LEFT = [44, WIDTH - 44 - COLUMNS * CELL]; // by seat
const SPAWN_TOP = WELL_TOP - 2 * CELL - 8; // the falling pair, two cells above the well
const QUEUE_X = WIDTH / 2;
const NEXT_CELL = 22;
const CHAIN_TOP = WELL_TOP + ROWS * CELL + 30; // the rows of the last turn, one per seat
const CHAIN_ROW = 58;
const NUISANCE_PER_LINE = 6;
const ANIMATION_MS = 650;
const SEAT_NAMES = ["left", "right"];
const ROTATION_WORDS = ["B right of A", "B on top of A", "B left of A", "B below A"];
const COLOUR_NAMES = ["", "red", "green", "blue", "yellow", "purple"];
// Where B sits relative to A, per rotation: [rows, columns] (rows grow downwards).
const B_FROM_A = [[0, 1], [-1, 0], [0, -1], [1, 0]];

const cellX = (seat, column) => WELL_LEFT[seat] + column * CELL;
const cellY = (row) => WELL_TOP + row * CELL;

export function pieceName(seat) {
  return `the ${SEAT_NAMES[seat]} well`;
}

export function describeMove(at, seat) {
  const place = `column ${at.column}, ${at.shape}`;
  const outcome = at.outcomes?.[seat];
  if (!outcome?.steps?.length) return place;
  const steps = outcome.steps.length;
  return `${place}: ${steps > 1 ? `${steps}-step chain` : "clears"}, +${outcome.points}`;
}

export function caption(view) {
  const standing = view.players.map((player, seat) => `P${seat + 1} ${player.score}`).join(" · ");
  if (view.ending) return `Game over: ${view.ending}`;
  const [a, b] = view.queue[0];
  return `Turn ${view.turn + 1} of ${view.turn_limit} · score ${standing} · both place the pair ${a}-${b}`;
}

/** The mark drawn inside a block of `colour` (1..5), centred at (cx, cy): shape tells colours apart
 *  (a circle, a square, a triangle, a diamond, a cross). */
function colourMark(colour, cx, cy) {
  const r = CELL * 0.2;
  const paths = {
    3: `M${cx},${cy - r * 1.15} L${cx + r * 1.1},${cy + r * 0.85} L${cx - r * 1.1},${cy + r * 0.85} Z`,
    4: `M${cx},${cy - r * 1.25} L${cx + r * 1.1},${cy} L${cx},${cy + r * 1.25} L${cx - r * 1.1},${cy} Z`,
    5: `M${cx - r},${cy - r} L${cx + r},${cy + r} M${cx + r},${cy - r} L${cx - r},${cy + r}`,
  };
  if (colour === 1) return svg("circle", { cx, cy, r, class: "mark" });
  if (colour === 2) return svg("rect", { x: cx - r, y: cy - r, width: 2 * r, height: 2 * r, class: "mark" });
  return svg("path", { d: paths[colour], class: colour === 5 ? "mark cross" : "mark" });
}

/** One block: a piece ('0' a skull, '1'..'5' a colour) at (x, y), `size` wide. */
function block(piece, x, y, size = CELL) {
  const group = svg("g", { class: piece === "0" ? "block skull" : `block colour${piece}`, "data-piece": piece, transform: `translate(${x} ${y}) scale(${size / CELL})` });
  group.append(svg("rect", { x: 1.5, y: 1.5, width: CELL - 3, height: CELL - 3, rx: 7, class: "body" }));
  if (piece === "0") {
    group.append(
      svg("circle", { cx: CELL / 2, cy: CELL / 2 - 1, r: CELL * 0.27, class: "face" }),
      svg("circle", { cx: CELL / 2 - 4, cy: CELL / 2 - 2, r: 2.6, class: "eye" }),
      svg("circle", { cx: CELL / 2 + 4, cy: CELL / 2 - 2, r: 2.6, class: "eye" }),
    );
  } else {
    group.append(colourMark(Number(piece), CELL / 2, CELL / 2));
  }
  return group;
}

/** The cells of a pair of `colours` [A, B] with A at [row, column] and B as `rotation` puts it. */
function pairCells([a, b], [row, column], rotation) {
  const [dr, dc] = B_FROM_A[rotation];
  return [{ piece: String(a), row, column }, { piece: String(b), row: row + dr, column: column + dc }];
}

function cellKey([row, column]) {
  return `${row},${column}`;
}

/** The stages a seat's last turn can show: each chain step, then the position now. */
function stagesOf(outcome) {
  return [...(outcome?.steps ?? []).map((step, index) => ({ step, index })), { now: true }];
}

function stepWords(step, index) {
  const colours = step.colours.map((colour) => COLOUR_NAMES[colour]).join(" and ");
  const parts = `CP ${step.chain_power} + CB ${step.colour_bonus} + GB ${step.group_bonus}`;
  return `Step ${index + 1}: ${step.blocks} ${colours} blocks · 10 × ${step.blocks} × (${parts}) = ${step.points}`;
}

/** Per seat: where its searched placements land ("r,c|r,c" -> share summed) and the largest share. */
function landingShares(heat) {
  const shares = [new Map(), new Map()];
  for (const { at, share, seat } of heat) {
    const landing = at.outcomes?.[seat]?.landing;
    if (!landing || !(share > 0)) continue;
    const key = landing.map(cellKey).sort().join("|");
    const entry = shares[seat].get(key) ?? { landing, share: 0, moves: [] };
    entry.share += share;
    entry.moves.push(`${at.column}:${at.rotation}`);
    shares[seat].set(key, entry);
  }
  return shares;
}

/** A domino around two neighbouring cells of `seat`'s well, inset by `inset`. */
function domino(seat, cells, inset, attributes) {
  const rows = cells.map(([row]) => row);
  const columns = cells.map(([, column]) => column);
  const x = cellX(seat, Math.min(...columns)) + inset;
  const y = cellY(Math.min(...rows)) + inset;
  const width = (Math.max(...columns) - Math.min(...columns) + 1) * CELL - 2 * inset;
  const height = (Math.max(...rows) - Math.min(...rows) + 1) * CELL - 2 * inset;
  return svg("rect", { x, y, width, height, rx: 9, ...attributes });
}

function playerCard(seat) {
  const x = WELL_LEFT[seat] - 20;
  const width = COLUMNS * CELL + 40;
  const title = svg("text", { x: x + 12, y: 26, class: "card-title" });
  const note = svg("text", { x: x + 12, y: 70, class: "card-note" });
  const segments = Array.from({ length: NUISANCE_PER_LINE }, (_, index) =>
    svg("rect", { x: x + 12 + index * 21, y: 38, width: 18, height: 14, rx: 3, class: "meter-cell" }),
  );
  const fill = Array.from({ length: NUISANCE_PER_LINE }, (_, index) => svg("rect", { x: x + 12 + index * 21, y: 38, width: 0, height: 14, rx: 3, class: "meter-fill" }));
  const meterText = svg("text", { x: x + 12 + NUISANCE_PER_LINE * 21 + 4, y: 50, class: "card-note" });
  const group = svg("g", { class: `player-card seat${seat}`, "data-seat": seat });
  group.append(svg("rect", { x, y: 4, width, height: 76, rx: 8, class: "card" }), title, ...segments, ...fill, meterText, note);
  return {
    group,
    draw(player, winner) {
      title.textContent = `P${seat + 1} score ${player.score}${winner === seat ? " · wins" : ""}`;
      fill.forEach((rect, index) => setAttributes(rect, { width: (18 * Math.min(Math.max(player.meter - index, 0), 1)).toFixed(1) }));
      meterText.textContent = `${player.meter.toFixed(1)}/6`;
      note.textContent = player.lost ? "lost: no room for the next pair" : player.chain ? `last turn: chain of ${player.chain}` : "meter: 6 = a line of skulls";
      setAttributes(group, { "data-score": player.score, "data-meter": player.meter, "data-chain": player.chain });
    },
  };
}

function queuePanel() {
  const group = svg("g", { class: "queue" });
  return {
    group,
    draw(queue) {
      const [now, ...next] = queue;
      const items = [svg("text", { x: QUEUE_X, y: WELL_TOP - 46, class: "card-title queue-title" }, "Now")];
      now.forEach((colour, index) => items.push(block(String(colour), QUEUE_X - CELL + index * CELL, WELL_TOP - 36)));
      items.push(svg("text", { x: QUEUE_X, y: WELL_TOP + 26, class: "card-note queue-title" }, "Next"));
      next.forEach((pair, index) => {
        const y = WELL_TOP + 36 + index * (NEXT_CELL + 12);
        pair.forEach((colour, side) => items.push(block(String(colour), QUEUE_X - NEXT_CELL + side * NEXT_CELL, y, NEXT_CELL)));
      });
      group.replaceChildren(...items);
      group.dataset.pairs = queue.map((pair) => pair.join("")).join(" ");
    },
  };
}

/** One seat's well: frame, column numbers, the blocks of a stage, the marks over them. */
function wellView(seat) {
  const left = WELL_LEFT[seat];
  const group = svg("g", { class: `well seat${seat}`, "data-seat": seat });
  const blocks = svg("g", { class: "blocks" });
  const marks = svg("g", { class: "marks" });
  const falling = svg("g", { class: "falling" });
  const numbers = Array.from({ length: COLUMNS }, (_, column) => svg("text", { x: left + column * CELL + CELL / 2, y: WELL_TOP + ROWS * CELL + 16, class: "column-number" }, column));
  group.append(svg("rect", { x: left - 4, y: WELL_TOP - 4, width: COLUMNS * CELL + 8, height: ROWS * CELL + 8, rx: 6, class: "well-frame" }), blocks, marks, falling, ...numbers);
  return {
    group,
    marks,
    /** The rows of a stage; `highlight`: {groups, skulls, arrived} lists of [row, col] to mark. */
    draw(rows, highlight = {}) {
      const clearing = new Set((highlight.groups ?? []).flat().map(cellKey));
      const going = new Set((highlight.skulls ?? []).map(cellKey));
      const arrived = new Set((highlight.arrived ?? []).map(cellKey));
      const drawn = [];
      rows.forEach((line, row) => {
        [...line].forEach((piece, column) => {
          if (piece === ".") return;
          const element = block(piece, cellX(seat, column), cellY(row));
          const key = cellKey([row, column]);
          setAttributes(element, { "data-row": row, "data-col": column });
          if (clearing.has(key)) element.classList.add("clearing");
          if (going.has(key)) element.classList.add("clearing", "going");
          if (arrived.has(key)) element.classList.add("arrived");
          drawn.push(element);
        });
      });
      blocks.replaceChildren(...drawn);
    },
    /** The pair falling now above the well: at `column` and `rotation` (A above column 2, B on top, by default). */
    fall(pair, column = 2, rotation = 1) {
      if (!pair) return falling.replaceChildren();
      const row = rotation === 3 ? 0 : 1; // A's row in the two spawn rows (B below A: A on top)
      falling.replaceChildren(
        ...pairCells(pair, [row, column], rotation).map(({ piece, row: r, column: c }) => block(piece, cellX(seat, c), SPAWN_TOP + r * CELL)),
      );
    },
  };
}

/** The row under the wells telling one seat's last turn: a button per chain step and one for now. */
function chainRow(seat, onPick) {
  const y = CHAIN_TOP + seat * CHAIN_ROW;
  const group = svg("g", { class: `chain-row seat${seat}`, "data-seat": seat });
  const label = svg("text", { x: 12, y: y + 16, class: "card-title" });
  const detail = svg("text", { x: 12, y: y + 40, class: "card-note" });
  const chips = svg("g", { class: "chips" });
  group.append(label, chips, detail);
  return {
    group,
    draw(outcome, chosen, arrivedCount) {
      const stages = stagesOf(outcome);
      const steps = stages.length - 1;
      label.textContent = `P${seat + 1}${outcome ? (steps ? `: chain of ${steps}` : ": no chain") : ""}`;
      const chipX = 200;
      const width = Math.min(64, (WIDTH - chipX - 12) / Math.max(stages.length + (steps ? 1 : 0), 1) - 6);
      const items = [];
      if (steps) {
        stages.forEach((stage, index) => {
          const text = stage.now ? "now" : `+${stage.step.points}`; // the steps in order, named in aria-label
          const x = chipX + index * (width + 6);
          items.push(
            svg("g", { class: `chip${index === chosen ? " selected" : ""}`, role: "button", tabindex: 0, "data-chain-stage": stage.now ? "now" : index, "data-seat": seat, "aria-label": stage.now ? `P${seat + 1}: the position now` : `P${seat + 1}: chain step ${index + 1}` },
              svg("rect", { x, y: y + 2, width, height: 20, rx: 6 }), svg("text", { x: x + width / 2, y: y + 16 }, text)),
          );
        });
        const x = chipX + stages.length * (width + 6);
        items.push(svg("g", { class: "chip play-chain", role: "button", tabindex: 0, "data-chain-stage": "play", "data-seat": seat, "aria-label": `P${seat + 1}: play the chain` }, svg("rect", { x, y: y + 2, width, height: 20, rx: 6 }), svg("text", { x: x + width / 2, y: y + 16 }, "▶")));
      }
      chips.replaceChildren(...items);
      const stage = stages[chosen];
      const now = [
        steps && `the chain scored +${outcome.points}`,
        arrivedCount && `${arrivedCount} skull${arrivedCount > 1 ? "s" : ""} arrived (outlined in red)`,
      ].filter(Boolean);
      detail.textContent = stage.now ? now.join(" · ") || (outcome ? "the pair settled" : "") : stepWords(stage.step, stage.index);
      group.dataset.stage = stage.now ? "now" : stage.index;
      group.dataset.steps = steps;
    },
    listen() {
      const picked = (event) => event.target.closest?.("[data-chain-stage]");
      group.addEventListener("click", (event) => {
        const chip = picked(event);
        if (chip) onPick(chip.dataset.chainStage);
      });
      group.addEventListener("keydown", (event) => {
        const chip = picked(event);
        if (!chip || (event.key !== "Enter" && event.key !== " ")) return;
        event.preventDefault();
        onPick(chip.dataset.chainStage);
      });
    },
  };
}

/** The skulls of `rows` that were not there once `outcome` settled: those that arrived this turn. */
function arrivedSkulls(rows, outcome) {
  if (!outcome) return [];
  const cells = [];
  rows.forEach((line, row) => [...line].forEach((piece, column) => {
    if (piece === "0" && outcome.well[row][column] === ".") cells.push([row, column]);
  }));
  return cells;
}

export function createBoard(container) {
  const root = svg("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, class: "board-svg smash", role: "img", "aria-label": "Smash the Code: both wells" });
  const wells = [wellView(0), wellView(1)];
  const cards = [playerCard(0), playerCard(1)];
  const queue = queuePanel();
  const heat = svg("g", { class: "heat-layer" });
  const targets = svg("g", { class: "column-targets" });
  const rotate = svg("g", { class: "rotate", role: "button", tabindex: 0, "aria-label": "Rotate the pair", display: "none" });
  rotate.append(svg("rect", { x: QUEUE_X - 44, y: WELL_TOP + ROWS * CELL - 30, width: 88, height: 28, rx: 8 }), svg("text", { x: QUEUE_X, y: WELL_TOP + ROWS * CELL - 11 }, "⟳ rotate"));
  const rows = [chainRow(0, (stage) => choose(0, stage)), chainRow(1, (stage) => choose(1, stage))];
  root.append(...cards.map((card) => card.group), queue.group, ...wells.map((well) => well.group), heat, targets, rotate, ...rows.map((row) => row.group));
  rows.forEach((row) => row.listen());
  container.replaceChildren(root);

  let view = null;
  let lastOutcomes = [null, null]; // per seat, the outcome of the move that led here
  let chosen = [0, 0]; // per seat, the stage shown
  let timers = [null, null];
  let picking = null; // {choices, choose, seat, undo}
  let rotation = 1; // of the person's pair, kept from one move to the next
  let hovered = 2; // the column the person last pointed at

  function drawSeat(seat) {
    const outcome = lastOutcomes[seat];
    const stages = stagesOf(outcome);
    chosen[seat] = Math.min(chosen[seat], stages.length - 1);
    const stage = stages[chosen[seat]];
    const arrived = arrivedSkulls(view.wells[seat], outcome);
    if (stage.now) wells[seat].draw(view.wells[seat], { arrived });
    else wells[seat].draw(stage.step.well, stage.step);
    rows[seat].draw(outcome, chosen[seat], arrived.length);
    wells[seat].group.dataset.stage = stage.now ? "now" : stage.index;
  }

  function choose(seat, stage) {
    clearTimeout(timers[seat]);
    timers[seat] = null;
    const last = stagesOf(lastOutcomes[seat]).length - 1;
    if (stage === "play") {
      const advance = (index) => {
        chosen[seat] = index;
        drawSeat(seat);
        if (index < last) timers[seat] = setTimeout(() => advance(index + 1), ANIMATION_MS);
      };
      advance(0);
      return;
    }
    chosen[seat] = stage === "now" ? last : Number(stage);
    drawSeat(seat);
  }

  function drawHeat(overlay) {
    const shapes = [];
    landingShares(overlay?.heat ?? []).forEach((bySeat, seat) => {
      const top = Math.max(0, ...[...bySeat.values()].map((entry) => entry.share));
      for (const { landing, share, moves } of bySeat.values()) {
        const opacity = (0.15 + (0.6 * share) / top).toFixed(3);
        const box = domino(seat, landing, 3, { class: "heat", "fill-opacity": opacity, "data-heat": moves.join(" "), "data-seat": seat, "data-share": share });
        const [[r1, c1], [r2, c2]] = landing;
        shapes.push(box, svg("text", { x: cellX(seat, (c1 + c2) / 2) + CELL / 2, y: cellY((r1 + r2) / 2) + CELL / 2, class: "heat-label" }, percent(share)));
      }
    });
    for (const { at, seat } of overlay?.played ?? []) {
      const landing = at.outcomes?.[seat]?.landing;
      if (landing) shapes.push(domino(seat, landing, 1, { class: `played-ring seat${seat}`, "data-played": `${at.column}:${at.rotation}`, "data-seat": seat }));
    }
    heat.replaceChildren(...shapes);
  }

  function drawFalling(overlay) {
    const pair = view.queue[0];
    const played = new Map((overlay?.played ?? []).map(({ at, seat }) => [seat, at]));
    wells.forEach((well, seat) => {
      if (view.ending) return well.fall(null);
      const at = played.get(seat);
      well.fall(pair, at?.column, at?.rotation);
    });
  }

  /** The person's placements at the current rotation: column -> action key. */
  function columnChoices() {
    const byColumn = new Map();
    for (const [key, at] of picking.choices) if (at.rotation === rotation) byColumn.set(String(at.column), key);
    return byColumn;
  }

  function preview(column) {
    if (!picking) return;
    const key = columnChoices().get(String(column));
    const at = key === undefined ? null : picking.choices.get(key);
    const outcome = at?.outcomes?.[picking.seat];
    const marks = [];
    if (outcome) {
      const colours = view.queue[0];
      outcome.landing.forEach(([row, c], index) => {
        const ghost = block(String(colours[index]), cellX(picking.seat, c), cellY(row));
        ghost.classList.add("ghost");
        marks.push(ghost);
      });
      if (outcome.points) marks.push(svg("text", { x: cellX(picking.seat, 3), y: WELL_TOP - 12, class: "preview-points" }, `+${outcome.points}`));
    }
    wells[picking.seat].marks.replaceChildren(...marks);
    wells[picking.seat].fall(view.queue[0], at?.column ?? 2, rotation);
  }

  function offer() {
    picking.undo();
    const byColumn = columnChoices();
    const seat = picking.seat;
    const items = Array.from({ length: COLUMNS }, (_, column) =>
      svg("rect", { x: cellX(seat, column), y: SPAWN_TOP, width: CELL, height: WELL_TOP - SPAWN_TOP + ROWS * CELL, class: `column-target${byColumn.has(String(column)) ? "" : " blocked"}`, "data-cell": column, "aria-label": `place the pair in column ${column}, ${ROTATION_WORDS[rotation]}` }),
    );
    targets.replaceChildren(...items);
    picking.undo = pickCells(targets, byColumn, picking.choose);
    root.dataset.rotation = rotation;
    preview(hovered);
  }

  targets.addEventListener("pointerover", (event) => {
    const column = event.target.closest?.("[data-cell]")?.dataset.cell;
    if (picking && column !== undefined) {
      hovered = Number(column);
      preview(hovered);
    }
  });
  targets.addEventListener("focusin", (event) => {
    const column = event.target.closest?.("[data-cell]")?.dataset.cell;
    if (picking && column !== undefined) preview(Number(column));
  });
  const turn = () => {
    if (!picking) return;
    rotation = (rotation + 1) % 4;
    offer();
  };
  rotate.addEventListener("click", turn);
  rotate.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" && event.key !== " ") return;
    event.preventDefault();
    turn();
  });

  return {
    draw(next, overlay, last = []) {
      view = next;
      const outcomes = [null, null];
      for (const { at, seat } of last) outcomes[seat] = at.outcomes?.[seat] ?? null;
      if (outcomes.some((outcome, seat) => outcome !== lastOutcomes[seat])) {
        chosen = outcomes.map((outcome) => stagesOf(outcome).length - 1); // a new position opens on "now"
        timers.forEach(clearTimeout);
        timers = [null, null];
      }
      lastOutcomes = outcomes;
      cards.forEach((card, seat) => card.draw(view.players[seat], view.winner));
      queue.draw(view.queue);
      wells.forEach((well) => well.marks.replaceChildren());
      [0, 1].forEach(drawSeat);
      drawFalling(overlay);
      drawHeat(overlay);
      setAttributes(root, { "data-turn": view.turn });
    },
    /** Offers `choices` (action key -> placement) in `seat`'s well: a column per placement at the
     *  current rotation, the rotate button to turn the pair. pick(null) withdraws the offer. */
    pick(choices, choose, seat = 0) {
      picking?.undo();
      targets.replaceChildren();
      if (!choices) {
        picking = null;
        setAttributes(rotate, { display: "none" });
        return;
      }
      picking = { choices, choose, seat, undo: () => {} };
      setAttributes(rotate, { display: null });
      offer();
    },
  };
}
