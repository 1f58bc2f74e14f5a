"""Errors meant for the user: one line saying what is wrong and what to do.

Anything raised as UserError is printed by the CLI without a traceback and
makes the command exit non-zero. Everything else is a bug in perfsleuth.
"""


class UserError(Exception):
    """A problem with the input, the machine or the environment, not a bug."""

    exit_status = 2


class StoreBusy(UserError):
    """Another perfsleuth process holds the store's write lock for too long."""


class NoSamples(UserError):
    """A recording or an import that holds no sample."""


class NothingStored(UserError):
    """The store asked for does not exist yet: an empty state to explain, not a failure."""
