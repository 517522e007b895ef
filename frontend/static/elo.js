// An Elo difference from pairs of seat-swapped games, in words: the SPRT of a new version and a
// challenge both carry one (`pentanomial`: pairs scoring 0, 0.5, 1, 1.5, 2 points for the first
// side; `elo`, `elo_low`, `elo_high`: its logistic Elo advantage and 95% interval, null before the
// first pair).

import { signed } from "./dom.js";

/** "best" or "worst" where every pair so far scored 2 points or 0: no finite Elo fits such a score,
 * so the estimate is only the regularized one (up to the clip that keeps it finite) and the honest
 * figure is the interval's far end, a bound. */
function oneSided(result) {
  const pairs = result.pentanomial.reduce((sum, count) => sum + count, 0);
  if (pairs > 0 && result.pentanomial[4] === pairs) return "best";
  if (pairs > 0 && result.pentanomial[0] === pairs) return "worst";
  return null;
}

/** The figure: "+35.2", "≥ +120.0" for a perfect score, "–" before the first pair. */
export function eloValue(result) {
  if (result.elo === null) return "–";
  const side = oneSided(result);
  if (side === "best") return `≥ ${signed(result.elo_low, 1)}`;
  if (side === "worst") return `≤ ${signed(result.elo_high, 1)}`;
  return signed(result.elo, 1);
}

/** The figure with its interval, in a sentence's words. */
export function eloText(result) {
  if (result.elo === null) return "no pairs yet";
  const side = oneSided(result);
  if (side === "best") return `at least ${signed(result.elo_low, 1)} Elo (95%): a perfect score so far`;
  if (side === "worst") return `at most ${signed(result.elo_high, 1)} Elo (95%): no point so far`;
  return `${signed(result.elo, 1)} Elo (95%: ${signed(result.elo_low, 1)} to ${signed(result.elo_high, 1)})`;
}
