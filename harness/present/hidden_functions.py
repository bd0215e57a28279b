"""Which functions a reader is shown as what grew: never the interpreter's own code, nor ttfg's measuring code.

Why a module of its own: the gate's views, ``ttfg explain``'s and the bisect's culprit all filter the same way, so
a pure-Python change reads as the user's function everywhere (callgrind names it ``PyLong_FromLong`` or
``type_call``; the call counts name the function), and none of the views imports another for it.
"""

from __future__ import annotations

import re
import sys

from ..results.attribution_record import FunctionDelta, not_a_cause

#: CPython's own source folders (callgrind names C files by their path in the build tree).
_CPYTHON = re.compile(r"(^|/)(Python|Objects|Modules|Parser|Include|Programs)/.*\.[ch]$|(^|/)Python-3\.[^/]*/")
_SYSTEM = re.compile(r"(^|/)(glibc[^/]*|libc|libpthread|ld-linux|libm|elf|malloc|nptl|string|sysdeps)(/|\.|-)"
                     r"|^\?\?\?$|^$")
_STDLIB = re.compile(r"(^|/)lib/python3\.\d+/(?!site-packages/)")


def interpreter_internal(fn: str, where: str) -> bool:
    """Whether a function belongs to the interpreter (CPython's C code, the standard library, libc, the loader),
    not to the user's or a framework's code. ``where`` is ``file:line`` or a file."""
    path = where.rsplit(":", 1)[0] if re.search(r":\d+$", where or "") else (where or "")
    if not path or path == "?" or path.startswith("<frozen") or path.startswith("<"):
        return True
    if _CPYTHON.search(path) or _SYSTEM.search(path) or _STDLIB.search(path):
        return True
    if "site-packages/" in path or "/" not in path and not path.endswith(".py"):
        return False
    top = path.lstrip("./").split("/", 1)[0].removesuffix(".py")
    return top in sys.stdlib_module_names


#: ttfg's own measuring code (the probe and the runner): it holds every sampled stack, so its inclusive
#: change is the whole change, and it is neither the user's code nor the framework's.
_HARNESS = re.compile(r"(^|/)(ttfg|harness)/measure/")


def hidden(f: FunctionDelta) -> bool:
    """Whether a reader's view leaves ``f`` out: the interpreter's own code (CPython's C functions, the standard
    library, libc, the loader), ttfg's measuring code, the dispatch and the runtimes' worker threads."""
    return interpreter_internal(f.fn, f.where) or bool(_HARNESS.search(f.where)) or not_a_cause(f.fn, f.file)


__all__ = ["hidden", "interpreter_internal"]
