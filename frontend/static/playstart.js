// Starting a game against a bot (the bot page's form, the play page's "New game"): the API
// answers the game and its key, which this browser keeps in localStorage to move in it.

import { postJson } from "./dom.js";

/** Where this browser keeps the key of game `id`. */
export function keyName(id) {
  return `arena-play-key-${id}`;
}

/** Starts a game against bot `botId`, the person in `seat` (0 moves first), and opens its page. */
export async function startGame(botId, seat) {
  const started = await postJson(`/api/v1/bots/${botId}/human-games`, { seat });
  localStorage.setItem(keyName(started.id), started.key);
  location.assign(`/play/${started.id}`);
}
