// Small helpers for the hand-drawn SVG plots: scales, round tick values, a plot frame with axes,
// and redrawing at the container's own pixel width (so text stays readable on a phone).

import { svg } from "./dom.js";

/** A linear map from the domain [d0, d1] onto the range [r0, r1]; `.invert` maps back. */
export function linear([d0, d1], [r0, r1]) {
  const span = d1 - d0 || 1;
  const scale = (value) => r0 + ((value - d0) / span) * (r1 - r0);
  scale.invert = (position) => d0 + ((position - r0) / (r1 - r0 || 1)) * span;
  return scale;
}

/** About `count` round values covering [low, high] (steps of 1, 2 or 5 times a power of ten). */
export function ticks(low, high, count = 5) {
  if (!(high > low)) return [low];
  const raw = (high - low) / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((candidate) => candidate >= raw);
  const values = [];
  for (let value = Math.ceil(low / step) * step; value <= high + step * 1e-9; value += step) {
    values.push(Math.abs(value) < step * 1e-9 ? 0 : value);
  }
  return values;
}

/** A label for each of `values` (from `ticks`) with as many decimals as their step needs, so close
 *  ticks never read alike ("0.005", "0.010", not "0.0", "0.0"). */
export function tickFormat(values) {
  const step = values.length > 1 ? Math.abs(values[1] - values[0]) : Math.abs(values[0]) || 1;
  const decimals = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
  return (value) => value.toFixed(decimals);
}

/** [low, high] widened by `fraction` of its span on each side (a zero span gets ±1). */
export function padded(low, high, fraction = 0.08) {
  const margin = (high - low) * fraction || 1;
  return [low - margin, high + margin];
}

/** An <svg> `width` x `height` px with a plot area inside `margin`, grid lines and tick labels.
 *  Returns {root, x, y, area}: the scales map data onto pixels; `area` is {left, right, top, bottom}. */
export function plotFrame({ width, height, xDomain, yDomain, xTicks, yTicks, xFormat = String, yFormat = String, margin = {} }) {
  const area = { left: margin.left ?? 44, right: width - (margin.right ?? 12), top: margin.top ?? 10, bottom: height - (margin.bottom ?? 26) };
  const x = linear(xDomain, [area.left, area.right]);
  const y = linear(yDomain, [area.bottom, area.top]);
  const root = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, class: "plot-svg" });
  const grid = svg("g", { class: "grid" });
  for (const value of yTicks) {
    grid.append(
      svg("line", { x1: area.left, x2: area.right, y1: y(value), y2: y(value) }),
      svg("text", { x: area.left - 6, y: y(value), class: "tick y-tick" }, yFormat(value)),
    );
  }
  for (const value of xTicks) {
    grid.append(svg("text", { x: x(value), y: area.bottom + 17, class: "tick x-tick" }, xFormat(value)));
  }
  grid.append(svg("rect", { x: area.left, y: area.top, width: area.right - area.left, height: area.bottom - area.top, class: "frame" }));
  root.append(grid);
  return { root, x, y, area };
}

/** Calls draw(width) now and whenever the container's width changes. */
export function drawAtWidth(container, draw) {
  let drawnWidth = null;
  const redraw = () => {
    const width = Math.floor(container.clientWidth);
    if (width > 0 && width !== drawnWidth) {
      drawnWidth = width;
      draw(width);
    }
  };
  new ResizeObserver(redraw).observe(container);
  redraw();
}

/** "x,y x,y ..." for a <polyline> or <polygon>. */
export function points(pairs) {
  return pairs.map(([px, py]) => `${px.toFixed(1)},${py.toFixed(1)}`).join(" ");
}
