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


class Interrupted(KeyboardInterrupt):
    """A signal that ends a run like Ctrl-C, naming itself: SIGTERM (a cancelled CI job, ``kill``) is raised as
    this by the CLI's handler (``cli/__init__.py``), so what is written afterwards says which signal it was."""

    def __init__(self, signal: str):
        super().__init__(signal)
        self.signal = signal


def signal_name(exc: BaseException) -> str:
    """The signal that ended a run: an :class:`Interrupted`'s own, else SIGINT (a bare KeyboardInterrupt is Ctrl-C)."""
    return getattr(exc, "signal", None) or "SIGINT (Ctrl-C)"


class signals_deferred:
    """SIGINT and SIGTERM ignored while the files that say a run was interrupted are written, so a second Ctrl-C
    (or a CI runner's repeated SIGTERM) does not leave them half written; the handlers are restored afterwards.
    Only in the main thread (elsewhere signals cannot be handled, and nothing changes)."""

    def __enter__(self):
        import signal
        import threading

        self.saved = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.saved[sig] = signal.signal(sig, signal.SIG_IGN)
        return self

    def __exit__(self, *exc):
        import signal

        for sig, handler in self.saved.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        return False
