"""The store's refusals of a request: each names the rule it applies, and carries the API's answer
(`status`, `code`; api.errors.refused turns one into the response). Shared by the modules whose
requests name bots (store.challenges, store.competitions)."""

from __future__ import annotations


class Refused(ValueError):
    """A request that may not be granted; its message is the sentence the caller reads."""

    status = 422
    code = "refused"
    retry_after: int | None = None  # seconds, for a refusal that time lifts


class BotNotFound(Refused):
    status, code = 404, "not_found"


class NotYourBot(Refused):
    status, code = 403, "not_owner"


class WrongGame(Refused):
    code = "wrong_game"


class WrongVersion(Refused):
    code = "wrong_version"
