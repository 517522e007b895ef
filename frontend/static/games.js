// The games page: the filtered list (the server filters; this draws it) and filters that apply
// on change. Choosing another ladder clears the bot filter, whose choices depend on the ladder.

import { pageData } from "./dom.js";
import { gamesTable } from "./gametable.js";

const data = pageData();
document.getElementById("games").replaceChildren(gamesTable(data.games, { botId: data.bot_id, ladders: data.ladders }));

const filters = document.getElementById("filters");
filters.addEventListener("change", (event) => {
  if (event.target.name === "ladder") filters.elements.bot.value = "";
  filters.requestSubmit();
});
