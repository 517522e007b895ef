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

/** The page header's seats (`.seats [data-seat]`) in the renderer's terms: what each plays with,
 *  and its swatch in the colour of its pieces where the renderer names one (Pente's stones), else
 *  in the seat's colour. */
export function labelSeats(renderer) {
  for (const item of document.querySelectorAll(".seats [data-seat]")) {
    const seat = Number(item.dataset.seat);
    item.querySelector(".piece-name").textContent = `· ${renderer.pieceName(seat)}`;
    const colour = renderer.pieceColour?.(seat);
    if (colour) item.querySelector(".swatch").classList.replace(`seat${seat}`, `piece-${colour}`);
  }
}
