// Coders Strike Back: the 16000 x 9000 track of view.checkpoints (radius 600, numbered, 0 the
// start and finish line), the four pods of view.pods (P1's A and B in blue, P2's C and D in
// orange; the second pod of a player has a dashed hull) pointing along their heading, the trail
// of their last turns, a ring while the shield is up, a flame on the turn a pod boosts, a flash
// where two pods touched (view.collisions), and above the track the turn, each pod's lap and each
// player's timeout counter. Stepping forward one turn glides the pods there (requestAnimationFrame,
// over most of the time until the next step, unless the reader prefers reduced motion), so
// playback is smooth at any speed.
//
// Below the track, for the pod selected (click a pod, or focus it and press Enter), the bars of
// the two heads its player's network gave that pod this turn: the angle head (37 turns of
// -18..+18 degrees) and the thrust head (52: 0..100, BOOST, SHIELD), as recorded in the insight's
// `heads` (a DQN's Q-values, or a policy's logits), the action played outlined. Players without
// a network (random, racer) have no bars. CSB actions are never offered by hand (no `pick`).
//
// createBoard(container, frames): `frames` are the replay's frames, which the trails, the boost
// flames and the bars read (the view drawn is one of their views). See player.js for the contract.

import { svg, setAttributes } from "../dom.js";

const SCALE = 0.05; // pixels per map unit: 16000 x 9000 -> 800 x 450
const WIDTH = 800;
const TRACK_TOP = 44;
const TRACK_HEIGHT = 9000 * SCALE;
const PANEL_TOP = TRACK_TOP + TRACK_HEIGHT + 14;
const HEIGHT = 800;
const POD_RADIUS = 400 * SCALE;
const CHECKPOINT_RADIUS = 600 * SCALE;
const TRAIL_TURNS = 8;
const MAX_GLIDE_MS = 450; // a forward step glides at most this long...
const GLIDE_SHARE = 0.8; // ...and at most this share of the time since the previous draw
const POD_LETTERS = "ABCD";
const SEAT_COLOURS = ["blue", "orange"];
const ANGLE_TURNS = Array.from({ length: 37 }, (_, index) => index - 18);
const THRUSTS = [...Array.from({ length: 50 }, (_, index) => Math.round((100 * index) / 49)), "BOOST", "SHIELD"];
const CHART = { top: PANEL_TOP + 72, height: 186, gap: 24 }; // above its top: a title line, a base line

const px = (x) => x * SCALE;
const py = (y) => TRACK_TOP + y * SCALE;

export function pieceName(seat) {
  return `${SEAT_COLOURS[seat]} pods ${POD_LETTERS[2 * seat]} and ${POD_LETTERS[2 * seat + 1]}`;
}

// A CSB action is four head indices (angle0, thrust0, angle1, thrust1); the frames keep no board
// terms for it (too many joint actions to list), so the player asks describeAction, never this.
export function describeMove(at) {
  return String(at);
}

export function describeAction(action, seat) {
  return [0, 1].map((pod) => `${POD_LETTERS[2 * seat + pod]} ${describeHead("angle", action[2 * pod])}, ${describeHead("thrust", action[2 * pod + 1])}`).join("; ");
}

export function caption(view) {
  if (view.ending) return `Race over after ${view.turn} turns: ${view.ending}`;
  const laps = view.pods.map((pod, index) => `${POD_LETTERS[index]} lap ${pod.lap}/${view.laps}`).join(", ");
  return `Turn ${view.turn} · ${laps} · timeouts P1 ${view.timeouts[0]}, P2 ${view.timeouts[1]}`;
}

/** The turn a head's index means, for people: "turn +4°", "thrust 86", "BOOST". */
function describeHead(head, index) {
  if (head.startsWith("angle")) return `turn ${ANGLE_TURNS[index] > 0 ? "+" : ""}${ANGLE_TURNS[index]}°`;
  return typeof THRUSTS[index] === "number" ? `thrust ${THRUSTS[index]}` : THRUSTS[index];
}

function trackLayer(view) {
  const group = svg("g", { class: "checkpoints" });
  view.checkpoints.forEach(([x, y], index) => {
    group.append(
      svg(
        "g",
        { class: `checkpoint${index === 0 ? " start" : ""}`, "data-checkpoint": index },
        svg("title", {}, index === 0 ? "checkpoint 0: start and finish" : `checkpoint ${index}`),
        svg("circle", { cx: px(x), cy: py(y), r: CHECKPOINT_RADIUS }),
        svg("text", { x: px(x), y: py(y), class: "checkpoint-number" }, index),
      ),
    );
  });
  return group;
}

/** A pod's shapes, drawn pointing east around (0, 0); `place` moves and turns them. */
function podShape(index) {
  const seat = index >> 1;
  const body = svg("g", { class: "pod-body" });
  const shield = svg("circle", { r: POD_RADIUS + 6, class: "shield-ring" });
  const flame = svg("path", { d: "M-15,-7 L-38,0 L-15,7 Z", class: "boost-flame" });
  body.append(
    flame,
    svg("circle", { r: POD_RADIUS, class: "hull" }),
    svg("path", { d: "M19,0 L-11,-11 L-5,0 L-11,11 Z", class: "arrow" }),
    shield,
  );
  const label = svg("text", { class: "pod-label" }, POD_LETTERS[index]);
  const title = svg("title");
  const group = svg(
    "g",
    { class: `pod seat${seat} pod${index % 2}`, "data-pod": index, tabindex: 0, role: "button" },
    title,
    body,
    label,
  );
  return {
    group,
    place(x, y, angle) {
      setAttributes(body, { transform: `translate(${px(x).toFixed(1)} ${py(y).toFixed(1)}) rotate(${angle.toFixed(1)})` });
      setAttributes(label, { x: px(x).toFixed(1), y: (py(y) - POD_RADIUS - 9).toFixed(1) });
    },
    update(pod, view, boosting, selected) {
      const speed = Math.round(Math.hypot(pod.vx, pod.vy));
      title.textContent = `${POD_LETTERS[index]}: P${seat + 1}'s pod ${(index % 2) + 1} · lap ${pod.lap}/${view.laps} · next checkpoint ${pod.next} · speed ${speed} · shield ${pod.shield} · boost ${pod.boosted ? "used" : "ready"} (click for its values)`;
      setAttributes(group, {
        "data-x": pod.x, "data-y": pod.y, "data-angle": pod.angle, "data-lap": pod.lap, "data-next": pod.next,
        "data-shield": pod.shield, "data-boosting": boosting, "data-selected": selected,
        "aria-label": `pod ${POD_LETTERS[index]} of P${seat + 1}: show its values`, "aria-pressed": selected,
      }); // prettier-ignore
      shield.classList.toggle("up", pod.shield > 0);
      shield.classList.toggle("fresh", pod.shield === 4);
      flame.classList.toggle("on", boosting);
    },
  };
}

/** The turn counter, and per seat its pods' laps and its timeout counter. */
function counters() {
  const turn = svg("text", { x: WIDTH / 2, y: 28, class: "counter turn" });
  const seats = [0, 1].map((seat) => svg("text", { x: seat ? WIDTH - 8 : 8, y: 28, class: `counter seat${seat}`, "data-seat": seat }));
  return {
    group: svg("g", { class: "counters" }, turn, ...seats),
    draw(view) {
      turn.textContent = `Turn ${view.turn}`;
      setAttributes(turn, { "data-turn": view.turn });
      seats.forEach((text, seat) => {
        const laps = [2 * seat, 2 * seat + 1].map((index) => `${POD_LETTERS[index]} lap ${view.pods[index].lap}/${view.laps}`);
        text.textContent = `P${seat + 1} ${laps.join(" · ")} · timeout ${view.timeouts[seat]}`;
        setAttributes(text, { "data-timeout": view.timeouts[seat], "data-laps": view.pods.slice(2 * seat, 2 * seat + 2).map((pod) => pod.lap).join(",") });
      });
    },
  };
}

/** The angle shortest from `from` to `to` (degrees), `share` of the way. */
function turnBetween(from, to, share) {
  const difference = ((((to - from) % 360) + 540) % 360) - 180;
  return from + difference * share;
}

/** Where one head's bars start: 0 where the legal values reach it, else a quarter of their spread
 *  beyond the weakest one, so values all far from 0 (a Q-value of 34 ± 0.1) show their differences. */
function barBase(legal) {
  const lowest = Math.min(...legal);
  const highest = Math.max(...legal);
  const spread = highest - lowest || Math.abs(highest) || 1;
  if (lowest > 0) return Math.max(0, lowest - spread / 4);
  if (highest < 0) return Math.min(0, highest + spread / 4);
  return 0;
}

/** `base` with the decimals that tell the legal values apart (a spread of 0.01: 33.997). */
function baseText(base, legal) {
  const spread = Math.max(...legal) - Math.min(...legal) || 1;
  return base.toFixed(Math.max(0, 1 - Math.floor(Math.log10(spread))));
}

/** The bars of one head's values (null: illegal) from `left`, `width` wide; `chosen` outlined. The
 *  bars start at `barBase` (the line drawn there says its value where it is not 0). */
function headChart(head, values, chosen, left, width) {
  const legal = values.filter((value) => value !== null);
  const base = legal.length ? barBase(legal) : 0;
  const low = Math.min(base, ...legal);
  const high = Math.max(base, ...legal);
  const range = high - low || 1;
  const zero = CHART.top + (CHART.height * (high - base)) / range;
  const step = width / values.length;
  const bars = values.map((value, index) => {
    if (value === null) return svg("rect", { x: left + index * step, y: zero - 1, width: Math.max(step - 1, 1), height: 2, class: "q-bar illegal", "data-index": index, "data-illegal": "" });
    const top = CHART.top + (CHART.height * (high - value)) / range;
    return svg(
      "rect",
      { x: (left + index * step).toFixed(2), y: Math.min(top, zero).toFixed(2), width: Math.max(step - 1, 1).toFixed(2), height: Math.max(Math.abs(zero - top), 1).toFixed(2), class: `q-bar${index === chosen ? " chosen" : ""}`, "data-index": index, "data-value": value },
      svg("title", {}, `${describeHead(head, index)}: ${value}`),
    );
  });
  const kind = head.startsWith("angle") ? "angle" : "thrust";
  const bottom = CHART.top + CHART.height + 18;
  const axis = (x, text, anchor = "") => svg("text", { x, y: bottom, class: `axis ${anchor}` }, text);
  const labels = kind === "angle"
    ? [axis(left, "−18°"), axis(left + width / 2, "0°", "middle"), axis(left + width, "+18°", "end")]
    : [axis(left, "0"), axis(left + step * 49.5 - 2, "100", "end"), axis(left + step * 50, "B S")];
  return svg(
    "g",
    { class: `q-chart ${kind}`, "data-head": head, "data-chosen": chosen },
    svg("text", { x: left, y: CHART.top - 26, class: "chart-title" }, `${kind} head · played ${chosen === undefined ? "–" : describeHead(head, chosen)}`),
    base === 0 ? null : svg("text", { x: left, y: CHART.top - 8, class: "axis chart-base" }, `bars from ${baseText(base, legal)}`),
    svg("line", { x1: left, x2: left + width, y1: zero, y2: zero, class: "zero", "data-base": base }),
    ...bars,
    ...labels,
  );
}

/** The panel of the selected pod's head values in `frame` (null: the overlay is off). */
function valuesPanel(panel, frame, podIndex, view, seatNames) {
  const seat = view.pods[podIndex].owner;
  const actor = frame?.actors?.indexOf(seat) ?? -1;
  const insight = actor >= 0 ? frame.insights?.[actor] : null;
  const name = `${POD_LETTERS[podIndex]} (P${seat + 1}${seatNames[seat] ? ` ${seatNames[seat]}` : ""})`;
  const heads = insight?.heads;
  const angleHead = `angle${podIndex % 2}`;
  const thrustHead = `thrust${podIndex % 2}`;
  setAttributes(panel, { "data-pod": podIndex, "data-kind": heads?.kind ?? null });
  if (!frame?.actions) {
    panel.replaceChildren(svg("text", { x: 10, y: PANEL_TOP + 24, class: "panel-title" }, `Pod ${name}: the race is over`));
    return;
  }
  if (!heads?.[angleHead] || !heads?.[thrustHead]) {
    panel.replaceChildren(svg("text", { x: 10, y: PANEL_TOP + 24, class: "panel-title" }, `Pod ${name}: no values recorded (its player has no network)`));
    return;
  }
  const played = frame.actions[actor];
  const what = heads.kind === "q" ? "Q-values" : "policy logits";
  const width = (WIDTH - 20 - CHART.gap) * 0.42;
  panel.replaceChildren(
    svg("text", { x: 10, y: PANEL_TOP + 24, class: "panel-title" }, `Pod ${name}: ${what} this turn (click a pod to choose)`),
    headChart(angleHead, heads[angleHead], played[2 * (podIndex % 2)], 10, width),
    headChart(thrustHead, heads[thrustHead], played[2 * (podIndex % 2) + 1], 10 + width + CHART.gap, WIDTH - 20 - width - CHART.gap),
  );
}

export function createBoard(container, frames = []) {
  const root = svg("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, class: "board-svg csb", role: "img", "aria-label": "Coders Strike Back track" });
  const field = svg("rect", { x: 0, y: TRACK_TOP, width: WIDTH, height: TRACK_HEIGHT, class: "field" });
  const checkpoints = svg("g");
  const trails = svg("g", { class: "trails" });
  const flashes = svg("g", { class: "collisions" });
  const pods = [0, 1, 2, 3].map(podShape);
  const counter = counters();
  const panel = svg("g", { class: "values-panel" });
  root.append(counter.group, field, checkpoints, trails, ...pods.map((pod) => pod.group), flashes, panel);
  container.replaceChildren(root);
  const frameOf = new Map(frames.map((frame, index) => [frame.view, index]));
  const seatNames = [0, 1].map((seat) => document.querySelector(`.seats [data-seat="${seat}"] a`)?.textContent ?? "");
  let selected = firstPodWithValues(frames);
  let drawn = null; // {view, overlay, index, at}: the last draw
  let glide = null;

  function select(index) {
    selected = index;
    if (drawn) draw(drawn.view, drawn.overlay, true);
  }
  pods.forEach((pod, index) => {
    pod.group.addEventListener("click", () => select(index));
    pod.group.addEventListener("keydown", (event) => {
      if (event.key !== "Enter") return;
      event.preventDefault();
      event.stopPropagation();
      select(index);
    });
  });

  function place(view, from, share) {
    view.pods.forEach((pod, index) => {
      const start = from?.pods[index] ?? pod;
      pods[index].place(start.x + (pod.x - start.x) * share, start.y + (pod.y - start.y) * share, turnBetween(start.angle, pod.angle, share));
    });
  }

  function glideTo(view, from, duration) {
    cancelAnimationFrame(glide);
    if (!from || duration < 20 || matchMedia("(prefers-reduced-motion: reduce)").matches) {
      place(view, null, 1);
      return;
    }
    const start = performance.now();
    const frame = (now) => {
      const share = Math.min((now - start) / duration, 1);
      place(view, from, share);
      glide = share < 1 ? requestAnimationFrame(frame) : null;
    };
    place(view, from, 0);
    glide = requestAnimationFrame(frame);
  }

  function draw(view, overlay, redraw = false) {
    const index = frameOf.get(view) ?? -1;
    const now = performance.now();
    if (!redraw) {
      checkpoints.replaceChildren(trackLayer(view));
      const forward = drawn && index > 0 && drawn.index === index - 1;
      glideTo(view, forward ? drawn.view : null, forward ? Math.min(MAX_GLIDE_MS, GLIDE_SHARE * (now - drawn.at)) : 0);
      trails.replaceChildren(...view.pods.map((pod, podIndex) => trail(frames, index, podIndex, pod)));
      flashes.replaceChildren(...view.collisions.map(([a, b]) => collisionFlash(view, a, b)));
    }
    view.pods.forEach((pod, podIndex) => {
      const before = index > 0 ? frames[index - 1].view.pods[podIndex] : null;
      pods[podIndex].update(pod, view, Boolean(before && pod.boosted && !before.boosted), podIndex === selected);
    });
    counter.draw(view);
    setAttributes(root, { "data-turn": view.turn, "data-collisions": view.collisions.length });
    panel.style.display = overlay ? "" : "none";
    if (overlay) valuesPanel(panel, index >= 0 ? frames[index] : null, selected, view, seatNames);
    drawn = { view, overlay, index, at: redraw ? drawn.at : now };
  }

  return { draw: (view, overlay) => draw(view, overlay) };
}

/** The first pod whose player recorded head values anywhere in `frames` (else pod A). */
function firstPodWithValues(frames) {
  for (const frame of frames) {
    const actor = (frame.insights ?? []).findIndex((insight) => insight?.heads);
    if (actor >= 0) return 2 * frame.actors[actor];
  }
  return 0;
}

/** The path of pod `podIndex` over the TRAIL_TURNS turns before frame `index`, ending at `pod`. */
function trail(frames, index, podIndex, pod) {
  const points = [];
  for (let at = Math.max(0, index - TRAIL_TURNS); at < index; at += 1) points.push(frames[at].view.pods[podIndex]);
  points.push(pod);
  const seat = podIndex >> 1;
  return svg("polyline", { points: points.map((point) => `${px(point.x).toFixed(1)},${py(point.y).toFixed(1)}`).join(" "), class: `trail seat${seat} pod${podIndex % 2}`, "data-pod": podIndex, "data-points": points.length });
}

/** A burst between pods `a` and `b`, which touched during the turn that led to `view`. */
function collisionFlash(view, a, b) {
  const x = (view.pods[a].x + view.pods[b].x) / 2;
  const y = (view.pods[a].y + view.pods[b].y) / 2;
  const star = Array.from({ length: 16 }, (_, index) => {
    const radius = index % 2 ? 8 : 22;
    const angle = (Math.PI / 8) * index;
    return `${(px(x) + radius * Math.cos(angle)).toFixed(1)},${(py(y) + radius * Math.sin(angle)).toFixed(1)}`;
  });
  return svg("polygon", { points: star.join(" "), class: "collision", "data-collision": `${a}-${b}` }, svg("title", {}, `pods ${POD_LETTERS[a]} and ${POD_LETTERS[b]} collided`));
}
