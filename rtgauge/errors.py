"""Errors the user can act on. The CLI prints their message as one sentence and
exits with their status; anything else is a bug and keeps its traceback."""


class UserError(Exception):
    """Bad input or a missing prerequisite; the message says what to do."""

    exit_status = 2


class RunFailed(UserError):
    """A measurement could not be taken; the message says why."""

    exit_status = 1
