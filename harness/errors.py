"""Exceptions that carry a message meant for the user, not a traceback."""


class TtfgError(Exception):
    """A problem with the user's input or environment; the CLI prints it and exits 2."""


class UsageError(TtfgError, ValueError):
    """Bad input: an unknown name, a wrong weight key or shape, a malformed option."""


class Unsupported(TtfgError):
    """This backend cannot run this case; ``str(exc)`` is the reason (a skip, not a failure)."""


class Unavailable(Unsupported):
    """The backend's framework is not installed in this environment."""


class BrokenPlugin(Unsupported):
    """A backend or model from another package that cannot be used; its cases are skipped with the reason."""
