"""The final of a competition, as pure functions over plain data (ARCHITECTURE §10).

One module per concern: `schedule` (the round robin, fixed when the final starts, and the extra
rounds where the ranking is unsettled), `ranking` (the Bradley-Terry fit of the final's games,
intervals, adjacent-pair probabilities and shared ranks) and `export` (the ranking as CSV and JSON,
the games as a zip of replay files). The competition's store and tasks call them; nothing here
reads the database, the clock or a random state.

Entrants are named by their bot ids (ints); game results reach the fit as
`arena_platform.ratings.GameResult`s naming them `str(bot id)`, as the store's rating fits do.
"""
