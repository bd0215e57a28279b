"""What ``ttfg releases`` sweeps and how it gates each adjacent pair: the request the CLI builds.

Why apart from ``app/releases.py``: ``ttfg --help`` builds every command's parser, and the
sweep's module imports the gate and the runner (numpy with them); the package names and
thinning choices the parser offers, and the request's parts, come from here, which imports
nothing heavy until a sweep runs.
"""

from __future__ import annotations


def packages() -> list[str]:
    """The frameworks whose releases can be swept (jax, autograd, torch)."""
    from ..provision.releases import BACKENDS

    return sorted(BACKENDS)


def thinnings() -> tuple[str, ...]:
    """How a range of releases is thinned: the last patch of each minor version, or every release."""
    from ..provision.releases import EVERY

    return EVERY


def default_backends(package: str) -> list[str]:
    """The backends measured in each release of ``package`` when ``--backend`` is not given."""
    from ..provision.releases import BACKENDS

    return list(BACKENDS[package])


def plan(package: str, versions: list[str] | None, low: str | None, high: str | None, every: str,
         extra: tuple[str, ...]) -> tuple[list, list[str]]:
    """``(releases, notes)``: the releases to sweep (``provision.releases.Release``), and those that cannot be had."""
    from ..provision import releases

    return releases.plan(package, versions, low, high, every, extra)


def pair_settings(min_effect: float, alpha: float, min_pairs: int, max_pairs: int, budget_per_pair_s: float,
                  timeout_s: float, threads: int):
    """The gate's settings for each adjacent pair of releases (``decide.gate_settings.GateSettings``): the time tier,
    deciding on the first gradient's wall time, within ``budget_per_pair_s`` seconds."""
    from ..decide.gate_settings import GateSettings
    from ..measure.runner import RunSettings

    return GateSettings(metric="first_grad_s", min_effect=min_effect, alpha=alpha,
                        min_pairs=min_pairs, max_pairs=max_pairs,
                        budget_s=budget_per_pair_s, profiles=0, tiers=("time",),
                        guard=("first_grad_s",),  # the pair's wall-time verdict is the first gradient's
                        run=RunSettings(repeat=1, timeout_s=timeout_s, threads=threads))


__all__ = ["default_backends", "packages", "pair_settings", "plan", "thinnings"]
