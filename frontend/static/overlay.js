// The search overlay of the replay player, independent of any game: the searched moves of a frame
// mapped to board terms through the frame's `view.moves` (the renderer places them on its board),
// the table of those moves, and the plot of each seat's value estimate over the game.
//
// Insights (arena_bots): {"value": v, "top": [{"action": [...], "share": s, "prior": p}], "simulations": n}.
// `value` is from the point of view of the player who moved, so each seat's series is its own estimate.

import { h, svg, percent, signed } from "./dom.js";
import { drawAtWidth, plotFrame, points } from "./plot.js";

/** The key of an action in a view's `moves`: its indices joined by commas (one head: "37"). */
export function actionKey(action) {
  return action.join(",");
}

/** The searched moves of `frame`: [{at, share, prior, seat}] with `at` in the view's board terms. */
export function searchedMoves(frame) {
  const moves = [];
  (frame.insights ?? []).forEach((insight, index) => {
    for (const top of insight?.top ?? []) {
      const at = frame.view.moves[actionKey(top.action)];
      if (at !== undefined) moves.push({ at, share: top.share, prior: top.prior ?? null, seat: frame.actors[index] });
    }
  });
  return moves;
}

/** The moves played from `frame`: [{at, seat}] with `at` in the view's board terms (none at the final position). */
export function playedMoves(frame) {
  return (frame.actions ?? [])
    .map((action, index) => ({ at: frame.view.moves[actionKey(action)], seat: frame.actors[index] }))
    .filter(({ at }) => at !== undefined);
}

/** Per actor of `frame`, a heading and the table of its search's top moves (`describeMove(at, seat)`
 *  names a move; `describeAction(action, seat)`, when given, one that `view.moves` does not hold). */
export function searchSummary(frame, seatName, describeMove, describeAction) {
  if (!frame.actions) return [h("p", { class: "muted" }, "The game is over.")];
  return frame.actors.map((seat, index) => {
    const insight = frame.insights?.[index];
    if (!insight?.top?.length) {
      return h("p", { class: "muted" }, `${seatName(seat)} played without a recorded search.`);
    }
    const facts = [
      typeof insight.value === "number" && `value ${signed(insight.value, 2)}`,
      insight.simulations && `${insight.simulations} simulations`,
    ].filter(Boolean);
    const played = actionKey(frame.actions[index]);
    const columns = insightColumns(insight);
    return h(
      "div",
      { class: "insight" },
      h("p", {}, h("strong", {}, seatName(seat)), facts.length ? ` · ${facts.join(" · ")}` : ""),
      h(
        "table",
        { class: "data compact top-moves" },
        h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Move"), ...columns.map(([name]) => h("th", { scope: "col", class: "num" }, name)))),
        h(
          "tbody",
          {},
          insight.top.map((top) => {
            const at = frame.view.moves[actionKey(top.action)];
            const chosen = actionKey(top.action) === played;
            return h(
              "tr",
              { class: chosen ? "chosen" : null },
              h("td", {}, at !== undefined ? describeMove(at, seat) : describeAction?.(top.action, seat) ?? `action ${actionKey(top.action)}`, chosen ? " ✓" : ""),
              ...columns.map(([, cell]) => h("td", { class: "num" }, cell(top))),
            );
          }),
        ),
      ),
    );
  });
}

/** What an insight with top moves records: "search" (visit shares and priors), "Q-values" (a DQN's,
 *  the mean over its heads) or "policy" (a policy's probabilities). */
function insightKind(insight) {
  if (insight.simulations) return "search";
  return typeof insight.top[0].q === "number" ? "Q-values" : "policy";
}

/** The heading over `frame`'s tables: what its movers' insights are ("Q-values of the move to
 *  play" for a greedy DQN, "Search of the move to play" for MCTS). */
export function insightHeading(frame) {
  const kinds = [...new Set((frame.insights ?? []).filter((insight) => insight?.top?.length).map(insightKind))];
  if (!kinds.length) return "The move to play";
  const what = kinds.join(" and ");
  return `${what[0].toUpperCase()}${what.slice(1)} of the move to play`;
}

/** The top-moves table's columns for `insight`, [heading, top move -> cell text]. */
function insightColumns(insight) {
  const kind = insightKind(insight);
  if (kind === "search") {
    return [["Visits", (top) => percent(top.share, 1)], ["Prior", (top) => (typeof top.prior === "number" ? percent(top.prior, 1) : "–")]];
  }
  if (kind === "Q-values") return [["Q-value", (top) => signed(top.q, 2)]];
  return [["Probability", (top) => percent(top.share, 1)]];
}

/** The value estimates of each seat: seat -> [[ply, value]] over the plies where it searched. */
export function valueSeries(frames) {
  const series = new Map();
  for (const frame of frames) {
    (frame.insights ?? []).forEach((insight, index) => {
      if (typeof insight?.value !== "number") return;
      const seat = frame.actors[index];
      if (!series.has(seat)) series.set(seat, []);
      series.get(seat).push([frame.ply, insight.value]);
    });
  }
  return series;
}

/** Draws the value plot of `frames` into `container`; `pick(ply)` is called on a click.
 *  Returns {mark(ply)}: moves the current-ply marker. */
export function valuePlot(container, frames, seatName, pick) {
  const series = valueSeries(frames);
  if (!series.size) {
    container.replaceChildren(h("p", { class: "muted" }, "No value estimates: neither side searched."));
    return { mark() {} };
  }
  const last = Math.max(frames.length - 1, 1);
  let current = 0;
  let place = () => {};
  drawAtWidth(container, (width) => {
    const { root, x, y, area } = plotFrame({
      width,
      height: 170,
      xDomain: [0, last],
      yDomain: [-1, 1],
      xTicks: [0, Math.round(last / 2), last],
      yTicks: [-1, 0, 1],
      yFormat: (value) => signed(value),
      margin: { left: 34 },
    });
    root.classList.add("value-plot");
    root.append(svg("line", { class: "zero", x1: area.left, x2: area.right, y1: y(0), y2: y(0) }));
    for (const [seat, values] of [...series].sort(([a], [b]) => a - b)) {
      root.append(
        svg("polyline", { class: `value-line seat${seat}`, points: points(values.map(([ply, value]) => [x(ply), y(value)])), "data-seat": seat, "data-count": values.length },
          svg("title", {}, `${seatName(seat)}: its own estimate when it moved`)),
      );
    }
    const marker = svg("line", { class: "current", y1: area.top, y2: area.bottom });
    const dots = svg("g", { class: "current-values" });
    root.append(marker, dots);
    root.addEventListener("click", (event) => {
      const bounds = root.getBoundingClientRect();
      pick(Math.round(x.invert(event.clientX - bounds.left)));
    });
    place = (ply) => {
      setMarker(marker, x(ply));
      dots.replaceChildren(
        ...[...series].flatMap(([seat, values]) =>
          values.filter(([at]) => at === ply).map(([, value]) => svg("circle", { class: `seat${seat}`, cx: x(ply), cy: y(value), r: 4 })),
        ),
      );
    };
    container.replaceChildren(root, legend(series, seatName));
    place(current);
  });
  return {
    mark(ply) {
      current = ply;
      place(ply);
    },
  };
}

function setMarker(line, position) {
  line.setAttribute("x1", position);
  line.setAttribute("x2", position);
}

function legend(series, seatName) {
  return h(
    "p",
    { class: "plot-legend" },
    [...series.keys()].sort().map((seat) => h("span", {}, h("span", { class: `swatch seat${seat}`, "aria-hidden": "true" }), ` ${seatName(seat)} `)),
  );
}
