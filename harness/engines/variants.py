"""The variant axes of a case, and the checks on them.

``params``: ``args`` passes the weights to the differentiated function as arguments;
``closure`` lets the function capture them (module state, globals, compile-time
constants), "closing over a global model".

``chain``: ``unrolled`` applies a model's repeated blocks one by one in a Python loop;
``scan`` applies one block over stacked weights (``jax.lax.scan``) or compiles the
block once and reuses it (regional compilation in torch.compile).
"""

from __future__ import annotations

from typing import Mapping

from ..errors import UsageError

AXES: dict[str, tuple[str, ...]] = {
    "params": ("args", "closure"),
    "chain": ("unrolled", "scan"),
}


def validate(variant: Mapping[str, str]) -> dict[str, str]:
    """Check axis names and values; raise :class:`UsageError` naming the bad one."""
    out = {}
    for axis, value in variant.items():
        if axis not in AXES:
            raise UsageError(f"unknown variant axis {axis!r}; known axes: {', '.join(AXES)}")
        if value not in AXES[axis]:
            raise UsageError(f"unknown value {value!r} for variant axis {axis!r}; choose one of: {', '.join(AXES[axis])}")
        out[axis] = value
    return out


def label(variant: Mapping[str, str]) -> str:
    """``params=args,chain=unrolled``: the canonical text form, axes in fixed order."""
    return ",".join(f"{axis}={variant[axis]}" for axis in AXES if axis in variant)


def parse(text: str) -> dict[str, str]:
    """Inverse of :func:`label`; accepts a bare value (``scan``) when it names one axis."""
    out: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        if "=" in part:
            axis, value = (s.strip() for s in part.split("=", 1))
        else:
            owners = [a for a, values in AXES.items() if part in values]
            if not owners:
                raise UsageError(f"unknown variant {part!r}; write axis=value with axes {', '.join(AXES)}")
            axis, value = owners[0], part
        out[axis] = value
    return validate(out)
