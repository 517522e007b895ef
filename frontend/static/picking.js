// Clickable board cells for a person's moves (renderers' `pick`, see player.js): the elements
// of a board carrying `data-cell` become buttons when their cell is a target.

/** Makes the elements under `root` whose `data-cell` is a key of `targets` (Map cell -> value)
 *  clickable and focusable; a click, Enter or Space calls `choose(value)`. Returns a function
 *  that undoes it all. */
export function pickCells(root, targets, choose) {
  const offered = [...root.querySelectorAll("[data-cell]")].filter((element) => targets.has(element.dataset.cell));
  for (const element of offered) {
    element.classList.add("pickable");
    element.setAttribute("tabindex", "0");
    element.setAttribute("role", "button");
  }
  const chosen = (event) => {
    const element = event.target.closest?.("[data-cell]");
    return element && targets.has(element.dataset.cell) ? targets.get(element.dataset.cell) : undefined;
  };
  const onClick = (event) => {
    const value = chosen(event);
    if (value !== undefined) choose(value);
  };
  const onKey = (event) => {
    if (event.key !== "Enter" && event.key !== " ") return;
    const value = chosen(event);
    if (value === undefined) return;
    event.preventDefault();
    choose(value);
  };
  root.addEventListener("click", onClick);
  root.addEventListener("keydown", onKey);
  return () => {
    root.removeEventListener("click", onClick);
    root.removeEventListener("keydown", onKey);
    for (const element of offered) {
      element.classList.remove("pickable", "picked");
      element.removeAttribute("tabindex");
      element.removeAttribute("role");
    }
  };
}

/** A renderer's `pick` for games whose move is one click: `cellOf(at)` names the `data-cell` of a
 *  move's board terms. Each call replaces the previous offer; pick(null) withdraws it. */
export function oneClickPicker(root, cellOf) {
  let undo = () => {};
  return (choices, choose) => {
    undo();
    undo = choices ? pickCells(root, new Map([...choices].map(([key, at]) => [cellOf(at), key])), choose) : () => {};
  };
}
