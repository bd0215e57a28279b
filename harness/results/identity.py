"""An environment's identity is its content: the interpreter and the exact packages read inside it.

Why: environments used to be told apart by their names. ``run --env 'old=autograd==1.7.0'``
in one file and ``run --env 'old=autograd==1.9.1'`` in another compared silently as
"old" against "old", and a file holding two environments compared with itself
(``--across-envs``) paired one environment with the other and reported regressions for
a file against itself. A name is a label; what is compared is what was installed.

A results file records every environment its cases ran in under ``environment.envs``
(name -> interpreter, key, versions, packages, read inside the environment); a case run
in one names it as the fourth part of its id (``model/backend/variant/env``).
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING

from ..errors import TtfgError

if TYPE_CHECKING:
    from .model import Results


class EnvironmentMismatch(TtfgError):
    """Two files name an environment alike but hold different packages in it, or pairing is ambiguous (exit 2)."""


def digest(env: dict) -> str:
    """The identity of a recorded environment: a digest of its interpreter, its exact package set and the files of
    its editable and local installs (``local``: ``{name: {tree, ...}}``, ``provision/local_installs.py``).

    An environment without such installs keeps the digest it always had (interpreter and packages), so files
    recorded before ``local`` existed compare as before; one with them changes whenever their bytes do (an
    editable autograd edited in place, same version).
    """
    content = [env.get("interpreter"), sorted((env.get("packages") or {}).items())]
    local = local_trees(env)
    if local:
        content.append(sorted(local.items()))
    return hashlib.sha256(json.dumps(content).encode()).hexdigest()[:16]


def local_trees(env: dict) -> dict[str, str]:
    """``{distribution: digest of its files}`` of a recorded environment's editable and local installs (one whose
    files are not digested, the measured code or a tree too large, says why in place of a digest)."""
    local = env.get("local") if isinstance(env.get("local"), dict) else {}
    return {str(name): str(entry.get("tree") or entry.get("why") or "unknown")
            for name, entry in local.items() if isinstance(entry, dict)}


def label(case_id: str) -> str | None:
    """The environment a case id names (its fourth part), or None for a case run in the interpreter as it is."""
    parts = case_id.split("/")
    return parts[3] if len(parts) > 3 and parts[3] else None


def recorded(results: "Results") -> dict[str, dict]:
    """``{name: recorded environment}`` of a results file (``environment.envs``)."""
    envs = results.environment.get("envs") or {}
    return {name: env for name, env in envs.items() if isinstance(env, dict)}


def package_changes(a: dict, b: dict) -> list[str]:
    """``numpy 2.4.6 -> 2.2.6`` for every package whose version differs between two recorded environments."""
    pa, pb = a.get("packages") or {}, b.get("packages") or {}
    ta, tb = local_trees(a), local_trees(b)
    return ([f"{n} {pa.get(n) or 'absent'} -> {pb.get(n) or 'absent'}" for n in sorted(set(pa) | set(pb))
             if pa.get(n) != pb.get(n)]
            + [f"{n} (editable or local install): its files changed" for n in sorted(set(ta) & set(tb))
               if ta[n] != tb[n] and pa.get(n) == pb.get(n)])


def same_named(base: "Results", head: "Results") -> dict[str, list[str]]:
    """``{name: package changes}`` for each environment both files name but whose contents differ."""
    a, b = recorded(base), recorded(head)
    return {name: package_changes(a[name], b[name]) for name in sorted(set(a) & set(b))
            if digest(a[name]) != digest(b[name])}


__all__ = ["EnvironmentMismatch", "digest", "label", "local_trees", "package_changes", "recorded", "same_named"]
