// A training session's page: its progress (episodes and training time used, as bars), the loss
// curve after each generation, and each checkpoint's ladder rating with its 95% interval against
// training step (the ladder's own ratings, refitted as the checkpoints play). The page polls the
// session every `poll_ms` and redraws in place; it stops once the session has ended and all its
// checkpoints are rated.

import { h, svg, pageData, getJson, ReadableError } from "./dom.js";
import { drawAtWidth, padded, plotFrame, points, tickFormat, ticks } from "./plot.js";

const PLOT_HEIGHT = 240;
/** What each kit's losses are (store.training.LossPoint); dqn has no policy loss. */
const LOSS_NAMES = {
  alphazero: { policy: "policy cross-entropy", value: "value MSE" },
  "actor-critic": { policy: "V-trace policy-gradient loss", value: "value MSE to the V-trace targets" },
  dqn: { value: "mean |TD error|" },
};
const ENDED = new Set(["finished", "failed", "cancelled"]);
const data = pageData();

/** The x axis of both plots: training steps from 0 to the furthest one seen. */
function stepDomain(session) {
  const steps = [session.progress.step, ...session.checkpoints.map((c) => c.step)];
  return [0, Math.max(1, ...steps)];
}

function axisLabel(x0, x1, text) {
  return svg("text", { class: "axis-label", x: (x0 + x1) / 2, y: PLOT_HEIGHT - 4 }, text);
}

function drawRatings(container, session) {
  const rated = session.checkpoints.filter((c) => c.rating !== null);
  if (!rated.length) {
    const why = session.checkpoints.length ? "its checkpoints have not finished a game yet." : "no checkpoint yet.";
    container.replaceChildren(h("p", { class: "muted" }, `No ladder rating yet: ${why}`));
    return;
  }
  drawAtWidth(container, (width) => {
    const xDomain = stepDomain(session);
    const yDomain = padded(Math.min(...rated.map((c) => c.low)), Math.max(...rated.map((c) => c.high)));
    const { root, x, y } = plotFrame({
      width, height: PLOT_HEIGHT, xDomain, yDomain, margin: { bottom: 40 },
      xTicks: ticks(...xDomain, 5).filter(Number.isInteger), yTicks: ticks(...yDomain, 5), yFormat: Math.round,
    });
    root.append(
      svg("polyline", { class: "rating-line", points: points(rated.map((c) => [x(c.step), y(c.rating)])) }),
      ...rated.map((c) =>
        svg(
          "g",
          { class: "checkpoint-rating", "data-step": c.step },
          svg("line", { class: "error-bar", x1: x(c.step), x2: x(c.step), y1: y(c.low), y2: y(c.high) }),
          svg("circle", { class: "rating-dot", cx: x(c.step), cy: y(c.rating), r: 3.5 }),
          svg("title", {}, `step ${c.step}: ${Math.round(c.rating)} (95%: ${Math.round(c.low)} to ${Math.round(c.high)}), ${c.rated_games} games`),
        ),
      ),
      axisLabel(x(xDomain[0]), x(xDomain[1]), "training step (Elo on the ladder, house bots' mean at 0)"),
    );
    container.replaceChildren(root);
  });
}

function drawLosses(container, session) {
  const names = LOSS_NAMES[session.kit] ?? LOSS_NAMES.alphazero;
  const losses = session.progress.losses.filter((p) => Object.keys(names).every((key) => Number.isFinite(p[key])));
  if (!losses.length) {
    container.replaceChildren(h("p", { class: "muted" }, "No generation trained yet."));
    return;
  }
  drawAtWidth(container, (width) => {
    const xDomain = stepDomain(session);
    const values = losses.flatMap((p) => Object.keys(names).map((key) => p[key]));
    const yDomain = padded(Math.min(0, ...values), Math.max(...values));
    const yTicks = ticks(...yDomain, 5);
    const { root, x, y } = plotFrame({
      width, height: PLOT_HEIGHT, xDomain, yDomain, margin: { bottom: 40 },
      xTicks: ticks(...xDomain, 5).filter(Number.isInteger), yTicks, yFormat: tickFormat(yTicks),
    });
    for (const [key, label] of Object.entries(names)) {
      root.append(
        svg("polyline", { class: `loss-line ${key}`, points: points(losses.map((p) => [x(p.step), y(p[key])])), "data-count": losses.length },
          svg("title", {}, label)),
        // a dot per generation: one generation is no line, and a line shows where its points are
        ...losses.map((p) => svg("circle", { class: `loss-dot ${key}`, cx: x(p.step), cy: y(p[key]), r: 3.5 },
          svg("title", {}, `${label} after step ${p.step}: ${Number(p[key].toPrecision(4))}`))),
      );
    }
    const lines = names.policy ? "policy loss solid, value loss dashed" : `${names.value}, dashed`;
    root.append(axisLabel(x(xDomain[0]), x(xDomain[1]), `training step (${lines})`));
    container.replaceChildren(root);
  });
}

function checkpointsTable(session) {
  if (!session.checkpoints.length) {
    return h("p", { class: "muted" }, `The first checkpoint comes after ${session.settings.checkpoint_every} generation(s).`);
  }
  const header = ["Generation", "Step", "Games", "Bot", "Rating", "95% interval", "Rated games"];
  return h(
    "table",
    { class: "data checkpoints" },
    h("thead", {}, h("tr", {}, header.map((text) => h("th", { scope: "col", class: text === "Bot" ? null : "num" }, text)))),
    h(
      "tbody",
      {},
      session.checkpoints.map((c) =>
        h(
          "tr",
          { "data-generation": c.generation },
          h("td", { class: "num" }, c.generation),
          h("td", { class: "num" }, c.step),
          h("td", { class: "num" }, c.games),
          h("td", {}, c.bot_id === null
            ? h("span", { class: "muted", title: c.error }, "refused by validation")
            : h("a", { href: `/bots/${c.bot_id}`, class: "bot-link" }, session.bot_name, "\u00a0", h("span", { class: "version" }, `v${c.version}`))),
          h("td", { class: "num" }, c.rating === null ? h("span", { class: "muted" }, "unrated") : Math.round(c.rating)),
          h("td", { class: "num" }, c.rating === null ? "" : `${Math.round(c.low)} to ${Math.round(c.high)}`),
          h("td", { class: "num" }, c.rated_games),
        ),
      ),
    ),
  );
}

/** A budget's bar and its text, "used / limit unit"; past the limit (a session stops before a
 *  generation, never inside one, so its last generation may run past it), "used unit (budget
 *  limit, met within a generation)". */
function setBar(id, used, limit, unit) {
  const bar = document.getElementById(`${id}-bar`);
  bar.max = limit;
  bar.value = Math.min(used, limit);
  document.getElementById(`${id}-text`).textContent =
    used > limit ? `${used} ${unit} (budget ${limit}, met within a generation)` : `${used} / ${limit} ${unit}`;
}

function render(session) {
  const { progress, settings } = session;
  const status = document.getElementById("status");
  status.textContent = session.status;
  status.dataset.status = session.status;
  const error = document.getElementById("error");
  error.hidden = !session.error;
  error.textContent = session.error ?? "";
  setBar("games", progress.games, settings.episodes, "games");
  setBar("time", Math.round(progress.elapsed_seconds), settings.time_limit_seconds, "s");
  document.getElementById("counters").textContent =
    `generation ${progress.generation} · ${progress.step} training steps · ${progress.positions} positions`;
  drawRatings(document.getElementById("ratings"), session);
  drawLosses(document.getElementById("losses"), session);
  document.getElementById("checkpoints").replaceChildren(checkpointsTable(session));
}

function settled(session) {
  return ENDED.has(session.status) && session.checkpoints.every((c) => c.bot_id === null || c.rating !== null);
}

async function poll(session) {
  if (settled(session)) return;
  const updated = document.getElementById("updated");
  try {
    session = await getJson(data.url);
    render(session);
    updated.textContent = `updated ${new Date().toLocaleTimeString()}`;
  } catch (error) {
    updated.textContent = error instanceof ReadableError ? error.message : String(error);
  }
  setTimeout(() => poll(session), data.poll_ms);
}

render(data.session);
setTimeout(() => poll(data.session), data.poll_ms);
