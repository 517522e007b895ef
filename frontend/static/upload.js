// The upload form: sends the model to POST /api/v1/bots with the token as a Bearer header and
// shows the validation report: the accepted bot, or the rejection's code and sentence. The token
// field starts with the token this browser keeps, and an accepted upload signs the browser in.

import { h } from "./dom.js";
import { labelAccountLink, savedToken, saveToken } from "./account.js";

const form = document.getElementById("upload");
const report = document.getElementById("report");
const OPTIONAL = ["name", "player"]; // left out when empty: the file's own manifest applies

function facts(details) {
  const scalars = Object.entries(details?.facts ?? {}).filter(([, value]) => value !== null && typeof value !== "object");
  if (!scalars.length) return null;
  return h("dl", { class: "pairs" }, scalars.map(([key, value]) => [h("dt", {}, key.replaceAll("_", " ")), h("dd", {}, value)]));
}

function checks(details) {
  const passed = details?.checks ?? [];
  return passed.length ? h("p", {}, "Checks passed: ", passed.join(", ")) : null;
}

function showAccepted(bot) {
  report.className = "report accepted";
  report.replaceChildren(
    h("h2", {}, "Accepted"),
    h("p", {}, "Your bot ", h("a", { href: `/bots/${bot.id}` }, `${bot.name} v${bot.version}`), ` joined ${bot.ladder}; its games are being scheduled.`),
    checks(bot.report),
    facts(bot.report),
  );
}

function showRejected(status, body) {
  report.className = "report rejected";
  report.replaceChildren(
    h("h2", {}, status === 422 && body.report ? "Rejected by validation" : "Not uploaded"),
    h("p", { class: "rejection" }, h("code", { class: "code" }, body.code ?? `HTTP ${status}`), " ", h("span", { class: "detail" }, body.detail ?? "the server gave no reason")),
    checks(body.report),
    facts(body.report),
  );
}

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  const fields = new FormData(form);
  const token = String(fields.get("token")).trim();
  fields.delete("token");
  for (const name of OPTIONAL) if (!fields.get(name)) fields.delete(name);
  const button = form.querySelector("button[type=submit]");
  button.disabled = true;
  report.hidden = false;
  report.className = "report pending";
  report.replaceChildren(h("p", {}, "Validating the model in the sandbox… this takes a few seconds."));
  try {
    const response = await fetch("/api/v1/bots", { method: "POST", headers: { Authorization: `Bearer ${token}` }, body: fields });
    const body = await response.json().catch(() => ({}));
    if (response.ok) {
      saveToken(token);
      labelAccountLink();
      showAccepted(body);
    } else showRejected(response.status, body);
  } catch (error) {
    showRejected(0, { code: "network_error", detail: `the server could not be reached: ${error.message}` });
  } finally {
    button.disabled = false;
  }
});

form.elements.token.value = savedToken() ?? "";
