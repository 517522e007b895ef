"""The final's exports: its ranking as CSV and as JSON, and its games as a zip of replay files
(ARCHITECTURE §10).

The ranking's columns, the same in both formats and in this order (a stable set: columns are only
ever added at the end):
  rank                  1 + the entrants above the entrant's group of tied entrants
  tied                  whether the entrant shares its rank (CSV: 1 or 0)
  entrant_id            the entrant's bot id
  name                  its display name, as the caller gives it
  rating                Elo relative to the entrants' mean, to 0.1 (empty/null without games)
  interval_low          bounds of its 95% interval, Elo, to 0.1 (empty/null without games)
  interval_high
  games, wins, draws, losses
  stronger_than_next    P(the entrant is stronger than the next below), to 0.0001 (empty/null:
                        the last row, or a pair with an entrant without games)
The JSON document is {"format": RANKING_FORMAT, "tie_level": ..., "entrants": [row objects]}.

The zip holds one replay file per game, the replay JSON as the runner stored it, named by
`replay_file_name`, each dated ZIP_TIME (the same games give the same zip, byte for byte);
extracted, its files are what `arena view` opens (`arena view *.json`).
"""

from __future__ import annotations

import csv
import io
import json
import zipfile
from collections.abc import Iterable, Mapping
from typing import IO, Any

from arena_platform.finals.ranking import TIE_LEVEL, FinalRanking, RankedEntrant
from arena_platform.finals.schedule import FinalPairing

RANKING_FORMAT = "arena-final-ranking/1"
COLUMNS = (
    "rank",
    "tied",
    "entrant_id",
    "name",
    "rating",
    "interval_low",
    "interval_high",
    "games",
    "wins",
    "draws",
    "losses",
    "stronger_than_next",
)
ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # every file's time in the zip, so the same games make the same bytes
ELO_DECIMALS = 1
PROBABILITY_DECIMALS = 4


def ranking_rows(ranking: FinalRanking, names: Mapping[int, str]) -> list[dict[str, Any]]:
    """The ranking's rows as dicts of COLUMNS, best first; `names` gives each entrant's display name."""
    return [_row(entrant, names) for entrant in ranking.rows]


def ranking_csv(ranking: FinalRanking, names: Mapping[int, str]) -> str:
    """The ranking as CSV text: a header of COLUMNS, then a line per entrant, best first."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in ranking_rows(ranking, names):
        writer.writerow({key: _csv_cell(value) for key, value in row.items()})
    return out.getvalue()


def ranking_json(ranking: FinalRanking, names: Mapping[int, str]) -> str:
    """The ranking as a JSON document (the module's doc)."""
    document = {"format": RANKING_FORMAT, "tie_level": TIE_LEVEL, "entrants": ranking_rows(ranking, names)}
    return json.dumps(document, indent=1)


def replay_file_name(pairing: FinalPairing, game_index: int) -> str:
    """The zip's name for game `game_index` (0: bot_a has the first seat) of `pairing`, sorting in
    schedule order up to 999,999 pairings: `000042-7-vs-12-game1.json`."""
    return f"{pairing.number:06d}-{pairing.bot_a}-vs-{pairing.bot_b}-game{game_index}.json"


def write_replay_zip(target: IO[bytes], replays: Iterable[tuple[str, bytes]]) -> int:
    """Writes a zip of the (file name, replay JSON) `replays` to `target`, one at a time (a final's
    games need not fit in memory); the number of files. ValueError for a name that is not a plain
    `.json` file name, or given twice."""
    written: set[str] = set()
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, replay in replays:
            if not name.endswith(".json") or "/" in name or "\\" in name or name.startswith("."):
                raise ValueError(f"a replay file needs a plain .json name, not {name!r}")
            if name in written:
                raise ValueError(f"two replays are named {name}")
            written.add(name)
            entry = zipfile.ZipInfo(name, date_time=ZIP_TIME)
            entry.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(entry, replay)
    return len(written)


def _row(entrant: RankedEntrant, names: Mapping[int, str]) -> dict[str, Any]:
    return {
        "rank": entrant.rank,
        "tied": entrant.tied,
        "entrant_id": entrant.entrant,
        "name": names[entrant.entrant],
        "rating": _rounded(entrant.rating, ELO_DECIMALS),
        "interval_low": _rounded(entrant.interval_low, ELO_DECIMALS),
        "interval_high": _rounded(entrant.interval_high, ELO_DECIMALS),
        "games": entrant.games,
        "wins": entrant.wins,
        "draws": entrant.draws,
        "losses": entrant.losses,
        "stronger_than_next": _rounded(entrant.stronger_than_next, PROBABILITY_DECIMALS),
    }


def _rounded(value: float | None, decimals: int) -> float | None:
    return None if value is None else round(value, decimals)


def _csv_cell(value: Any) -> Any:
    """A value as CSV writes it: None empty, booleans 1 or 0."""
    if value is None:
        return ""
    return int(value) if isinstance(value, bool) else value
