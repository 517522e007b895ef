// Finding a game's renderer module (renderers/<game>.js; player.js states their contract).

import { ReadableError } from "./dom.js";

const GAME_NAME = /^[a-z][a-z0-9_]*$/;

/** The renderer module of `game`; a ReadableError when there is none. */
export async function loadRenderer(game) {
  if (!GAME_NAME.test(game)) throw new ReadableError("this viewer does not know the game of this replay.");
  try {
    return await import(`./renderers/${game}.js`);
  } catch {
    throw new ReadableError(`this viewer has no renderer for ${game} yet.`);
  }
}
