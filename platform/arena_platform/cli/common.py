"""What every command module shares."""


class UsageError(Exception):
    """A problem with what the user asked for; its message is shown as is, with exit status 2."""
