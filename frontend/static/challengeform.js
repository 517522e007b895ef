// The bot page's challenge form: the signed-in user (account.js's token) picks one of their active
// bots of the same ladder, the number of pairs and whether the games are rated, and POST
// /api/v1/challenges books it; the browser then opens the challenge's page. Signed out, or with no
// bot on the ladder, the page says what to do instead. The API decides every limit and refusal,
// whose sentence the form shows.

import { h, getJson, postJson, ReadableError } from "./dom.js";
import { savedToken } from "./account.js";

/** The active versions of the user's bots on ladder `ladderId`, other than bot `exceptId`:
 *  [{id, label}] in the order GET /api/v1/me/bots lists them. */
function candidates(owned, ladderId, exceptId) {
  return owned
    .filter((bot) => bot.ladder_id === ladderId)
    .flatMap((bot) => bot.versions.filter((v) => v.status === "active" && v.id !== exceptId).map((v) => ({ id: v.id, label: `${bot.name} v${v.version}` })));
}

function invite(invitation, ...content) {
  invitation.replaceChildren(...content);
  invitation.hidden = false;
}

/** Fills and shows the form of the bot page of `bot` ({id, ladder_id}), where the page has one. */
export async function offerChallenge(bot) {
  const form = document.getElementById("challenge-form");
  if (!form) return; // the bot cannot be challenged (retired, or an old game version)
  const invitation = document.getElementById("challenge-invite");
  const token = savedToken();
  if (!token) {
    invite(invitation, h("a", { href: "/me/bots" }, "Sign in"), " to challenge this bot with one of yours.");
    return;
  }
  const auth = { Authorization: `Bearer ${token}` };
  let mine;
  try {
    mine = candidates((await getJson("/api/v1/me/bots", auth)).bots, bot.ladder_id, bot.id);
  } catch (error) {
    invite(invitation, `Your bots could not be read: ${error.message}`);
    return;
  }
  if (!mine.length) {
    invite(invitation, "You have no other active bot on this ladder to challenge it with: ", h("a", { href: "/upload" }, "upload one"), ".");
    return;
  }
  document.getElementById("challenge-bot").replaceChildren(...mine.map((option) => h("option", { value: option.id }, option.label)));
  form.hidden = false;
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const report = document.getElementById("challenge-error");
    report.textContent = "";
    const body = {
      bot_id: Number(form.elements.bot_id.value),
      opponent_id: bot.id,
      pairs: Number(form.elements.pairs.value),
      rated: form.elements.rated.checked,
    };
    postJson("/api/v1/challenges", body, auth)
      .then((challenge) => location.assign(`/challenges/${challenge.id}`))
      .catch((error) => {
        report.textContent = error instanceof ReadableError ? error.message : String(error);
      });
  });
}
