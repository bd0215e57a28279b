"""Entries that break the contract on purpose (see pyproject.toml for which is which)."""

from ttfg.engines import Backend


class NotABackend:
    """Has the right name, but is not a ttfg.engines.Backend."""

    name = "broken.not_a_backend"


class NoBuildBackend(Backend):
    """Declares itself but never implements build()."""

    name = "broken.no_build"
    framework = "autograd"
    modules = ("autograd",)
    supports = {"params": ("args",), "chain": ("unrolled",)}

    def import_framework(self):
        import autograd  # noqa: F401


def build_nothing(**options):
    """A model builder that returns no model."""
    return None
