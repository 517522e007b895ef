// Building the DOM from data without ever parsing data as markup: every string becomes a text
// node or an attribute value. The modules of the pages build everything they draw through here.

const SVG_NS = "http://www.w3.org/2000/svg";

/** An HTML element: h("a", {href: "/bots/1", class: "x"}, "text", node, ...).
 *  Attributes that are null, undefined or false are left out; children that are null, undefined
 *  or false are skipped, arrays are flattened, anything else that is not a node becomes text. */
export function h(tag, attributes = {}, ...children) {
  return fill(document.createElement(tag), attributes, children);
}

/** An SVG element, as `h` builds HTML ones. */
export function svg(tag, attributes = {}, ...children) {
  return fill(document.createElementNS(SVG_NS, tag), attributes, children);
}

/** Sets (or, for null/undefined/false, removes) the attributes of an existing element. */
export function setAttributes(element, attributes) {
  for (const [name, value] of Object.entries(attributes)) {
    if (/^on/i.test(name)) throw new Error(`event handler attributes are not allowed: ${name}`);
    if (value === null || value === undefined || value === false) element.removeAttribute(name);
    else element.setAttribute(name, value === true ? "" : String(value));
  }
  return element;
}

function fill(element, attributes, children) {
  setAttributes(element, attributes);
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

/** The JSON the server embedded for this page's module (`page_data` in the templates). */
export function pageData() {
  return JSON.parse(document.getElementById("page-data").textContent);
}

/** An error whose message is written for people (pages show it as it is); any other error is
 *  a bug or a browser's own message, which pages replace with a sentence of their own. */
export class ReadableError extends Error {
  constructor(message, code = "error") {
    super(message);
    this.name = "ReadableError";
    this.code = code;
  }
}

/** GET a JSON document of this server (with extra `headers`). Fails with a ReadableError: the
 *  API's sentence and code when it answers an error, or a sentence of ours when the server cannot
 *  be reached or answers something that is not JSON. */
export function getJson(url, headers = {}) {
  return requestJson(url, { headers: { Accept: "application/json", ...headers } });
}

/** POST `body` as JSON to this server (with extra `headers`) and read the JSON answer; fails
 *  as getJson does. */
export function postJson(url, body, headers = {}) {
  return requestJson(url, {
    method: "POST",
    headers: { Accept: "application/json", "Content-Type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
}

async function requestJson(url, options) {
  let response;
  try {
    response = await fetch(url, options);
  } catch {
    throw new ReadableError("Arena could not be reached: check the connection, then reload the page.", "unreachable");
  }
  const body = await response.json().catch(() => null);
  if (!response.ok) {
    throw typeof body?.detail === "string"
      ? new ReadableError(body.detail, body.code)
      : new ReadableError(`the server answered ${response.status} without an explanation; reload the page to try again.`, "http_error");
  }
  if (body === null) throw new ReadableError("the server's answer was not readable; reload the page to try again.", "not_json");
  return body;
}

/** A link to a bot's page: its name and version (`ref`: {id, name, version}). */
export function botLink(ref) {
  return h("a", { href: `/bots/${ref.id}`, class: "bot-link" }, ref.name, "\u00a0", h("span", { class: "version" }, `v${ref.version}`));
}

/** A Python-side UTC time (ISO 8601) as a short local date and time. */
export function shortTime(iso) {
  return new Date(iso).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

/** 0.4567 -> "46%". */
export function percent(fraction, digits = 0) {
  return `${(100 * fraction).toFixed(digits)}%`;
}

/** A signed number: 3 -> "+3", -0.25 -> "−0.25" (a real minus sign). */
export function signed(value, digits = 0) {
  const text = Math.abs(value).toFixed(digits);
  return value > 0 ? `+${text}` : value < 0 ? `−${text}` : text;
}

/** A span of `minutes` in words: "under a minute", "about 7 min", "about 2.5 h". */
export function duration(minutes) {
  if (minutes < 1) return "under a minute";
  return minutes < 90 ? `about ${Math.round(minutes)} min` : `about ${(minutes / 60).toFixed(1)} h`;
}
