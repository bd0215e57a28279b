"""An attribution as profile files: pprof (one a side, for ``pprof -diff_base``) and speedscope (one a case).

Why: a reviewer who wants to dig past the top five rows opens the change in the viewer they already use. What is
written is what the attribution holds, both sides' numbers of every row: the Python call counts (under "your code"
or "the frameworks' code"), the compiled code per model line (jaxpr equations, FX nodes, graph breaks), the
functions' own instructions or sampled time, and the phases' seconds. Each is a flat list of one- or two-frame
stacks (the counts carry no call stacks), so a flame graph shows who grew, not who called them.

pprof's ``profile.proto`` (github.com/google/pprof, ``proto/profile.proto``) is encoded by protobuf, built from its
field numbers here (no generated module to vendor); a base and a head profile hold the same sample types in the
same order, which ``pprof -diff_base base.pb.gz head.pb.gz`` requires. Speedscope's file is its documented JSON
(``file-format-spec.ts``): one sampled profile per kind and side, frames shared.
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass, field

from ..results.attribution_record import Attribution

FORMATS = ("pprof", "speedscope")
SPEEDSCOPE_SCHEMA = "https://www.speedscope.app/file-format-schema.json"
_CODE = {"project": "your code", "framework": "the frameworks' code"}


@dataclass
class Series:
    """One kind of number over both sides: its frames' stacks (root first) and each side's weight."""

    kind: str
    unit: str  # "count" or "seconds"
    stacks: list[tuple[tuple[str, str | None, int | None], ...]] = field(default_factory=list)
    base: list[float] = field(default_factory=list)
    head: list[float] = field(default_factory=list)

    def add(self, stack, base, head) -> None:
        self.stacks.append(tuple(stack))
        self.base.append(float(base or 0))
        self.head.append(float(head or 0))


def series(a: Attribution) -> list[Series]:
    """Every kind of number the attribution holds, in a fixed order; kinds with no row left out."""
    out = []
    phases = Series("phase_time", "seconds")
    for p in a.phases:
        if p.base is not None or p.head is not None:
            phases.add([(p.phase, None, None)], p.base, p.head)
    calls = Series("calls", "count")
    for c in a.calls:
        calls.add([(_CODE.get(c.code, c.code), None, None), (c.fn, c.file, c.line)], c.base, c.head)
    from ..decide.source_lines import KIND_WORDS

    lines = {k: Series(k, "count") for k in KIND_WORDS}
    for c in a.lines:
        name = f"{c.fn}: {c.reason}" if c.reason else c.fn
        lines[c.kind].add([(_CODE.get(c.code, c.code), None, None), (name, c.file, c.line)], c.base, c.head)
    functions = {}
    for f in a.functions:
        s = functions.setdefault(f.unit, Series("instructions" if f.unit == "instructions" else "sampled_time",
                                               "count" if f.unit == "instructions" else "seconds"))
        s.add([(f.fn, f.file, f.line)], f.base_self, f.head_self)
    for s in [phases, calls, *lines.values(), *functions.values()]:
        if s.stacks:
            out.append(s)
    return out


def has_rows(a: Attribution) -> bool:
    """Whether an attribution has anything below its phases (call counts, source lines, function lists)."""
    return bool(a.calls or a.lines or a.functions)


def slug(case: str) -> str:
    """A case id as a file name: ``resnet15/jax.jit/args-unrolled`` -> ``resnet15_jax.jit_args-unrolled``."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", case).strip("._") or "case"


# ---------------------------------------------------------------------------- pprof


_PROFILE_CLASS = None


def profile_class():
    """pprof's ``perftools.profiles.Profile`` message, from a descriptor built with protobuf (field numbers of
    ``profile.proto``: the fields ttfg writes and every field a reader needs)."""
    global _PROFILE_CLASS
    if _PROFILE_CLASS is not None:
        return _PROFILE_CLASS
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name="ttfg_pprof_profile.proto", package="perftools.profiles",
                                             syntax="proto3")

    def message(name, *fields):
        m = fdp.message_type.add(name=name)
        for fname, number, ftype, repeated, type_name in fields:
            f = m.field.add(name=fname, number=number, type=ftype,
                            label=F.LABEL_REPEATED if repeated else F.LABEL_OPTIONAL)
            if type_name:
                f.type_name = f".perftools.profiles.{type_name}"

    msg, i64, u64, s, b = F.TYPE_MESSAGE, F.TYPE_INT64, F.TYPE_UINT64, F.TYPE_STRING, F.TYPE_BOOL
    message("Profile", ("sample_type", 1, msg, True, "ValueType"), ("sample", 2, msg, True, "Sample"),
            ("mapping", 3, msg, True, "Mapping"), ("location", 4, msg, True, "Location"),
            ("function", 5, msg, True, "Function"), ("string_table", 6, s, True, None),
            ("drop_frames", 7, i64, False, None), ("keep_frames", 8, i64, False, None),
            ("time_nanos", 9, i64, False, None), ("duration_nanos", 10, i64, False, None),
            ("period_type", 11, msg, False, "ValueType"), ("period", 12, i64, False, None),
            ("comment", 13, i64, True, None), ("default_sample_type", 14, i64, False, None))
    message("ValueType", ("type", 1, i64, False, None), ("unit", 2, i64, False, None))
    message("Sample", ("location_id", 1, u64, True, None), ("value", 2, i64, True, None),
            ("label", 3, msg, True, "Label"))
    message("Label", ("key", 1, i64, False, None), ("str", 2, i64, False, None), ("num", 3, i64, False, None),
            ("num_unit", 4, i64, False, None))
    message("Mapping", ("id", 1, u64, False, None), ("memory_start", 2, u64, False, None),
            ("memory_limit", 3, u64, False, None), ("file_offset", 4, u64, False, None),
            ("filename", 5, i64, False, None), ("build_id", 6, i64, False, None),
            ("has_functions", 7, b, False, None), ("has_filenames", 8, b, False, None),
            ("has_line_numbers", 9, b, False, None), ("has_inline_frames", 10, b, False, None))
    message("Location", ("id", 1, u64, False, None), ("mapping_id", 2, u64, False, None),
            ("address", 3, u64, False, None), ("line", 4, msg, True, "Line"), ("is_folded", 5, b, False, None))
    message("Line", ("function_id", 1, u64, False, None), ("line", 2, i64, False, None))
    message("Function", ("id", 1, u64, False, None), ("name", 2, i64, False, None),
            ("system_name", 3, i64, False, None), ("filename", 4, i64, False, None),
            ("start_line", 5, i64, False, None))
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    _PROFILE_CLASS = message_factory.GetMessageClass(pool.FindMessageTypeByName("perftools.profiles.Profile"))
    return _PROFILE_CLASS


def pprof_bytes(a: Attribution, role: str, comment: str) -> bytes:
    """One side's profile of ``a``, gzipped as pprof writes it: a sample type per kind (``calls/count``,
    ``jaxpr_eqns/count``, ``phase_time/nanoseconds`` ...), one sample per row holding its kind's value."""
    found = series(a)
    prof = profile_class()()
    strings: dict[str, int] = {}

    def sid(text: str) -> int:
        if text not in strings:
            strings[text] = len(strings)
            prof.string_table.append(text)
        return strings[text]

    sid("")
    for s in found:
        prof.sample_type.add(type=sid(s.kind), unit=sid("nanoseconds" if s.unit == "seconds" else "count"))
    functions: dict[tuple, int] = {}
    locations: dict[tuple, int] = {}

    def location(frame) -> int:
        name, file, line = frame
        fkey = (name, file or "")
        if fkey not in functions:
            functions[fkey] = len(functions) + 1
            prof.function.add(id=functions[fkey], name=sid(name), system_name=sid(name), filename=sid(file or ""),
                              start_line=line or 0)
        lkey = (name, file or "", line or 0)
        if lkey not in locations:
            locations[lkey] = len(locations) + 1
            prof.location.add(id=locations[lkey], line=[{"function_id": functions[fkey], "line": line or 0}])
        return locations[lkey]

    for k, s in enumerate(found):
        weights = s.base if role == "base" else s.head
        for stack, w in zip(s.stacks, weights):
            value = int(round(w * 1e9)) if s.unit == "seconds" else int(w)
            if value == 0:
                continue
            values = [0] * len(found)
            values[k] = value
            prof.sample.add(location_id=[location(f) for f in reversed(stack)], value=values)  # leaf first
    prof.comment.append(sid(comment))
    return gzip.compress(prof.SerializeToString(), mtime=0)


# ---------------------------------------------------------------------------- speedscope


def speedscope_json(a: Attribution, title: str) -> str:
    """Speedscope's file for one case: a sampled profile per kind and side (``calls, base``, ``calls, head`` ...)."""
    frames: list[dict] = []
    index: dict[tuple, int] = {}

    def frame(f) -> int:
        name, file, line = f
        if f not in index:
            index[f] = len(frames)
            frames.append({"name": name, **({"file": file} if file else {}), **({"line": line} if line else {})})
        return index[f]

    profiles = []
    for s in series(a):
        for role in ("base", "head"):
            weights = s.base if role == "base" else s.head
            kept = [(st, w) for st, w in zip(s.stacks, weights) if w > 0]
            profiles.append({"type": "sampled", "name": f"{a.case}: {s.kind}, {role}",
                             "unit": "seconds" if s.unit == "seconds" else "none",
                             "startValue": 0, "endValue": sum(w for _, w in kept),
                             "samples": [[frame(f) for f in st] for st, _ in kept],
                             "weights": [w for _, w in kept]})
    doc = {"$schema": SPEEDSCOPE_SCHEMA, "version": "0.6.0", "name": title, "exporter": "ttfg explain",
           "activeProfileIndex": 0, "shared": {"frames": frames}, "profiles": profiles}
    return json.dumps(doc, indent=1) + "\n"


def files(attributions: list[Attribution], fmt: str, base_name: str, head_name: str) -> dict[str, bytes | str]:
    """``{file name: content}`` for every attribution: ``<case>.base.pb.gz`` and ``<case>.head.pb.gz`` (pprof), or
    ``<case>.speedscope.json``."""
    out: dict[str, bytes | str] = {}
    for a in attributions:
        name = slug(a.case)
        if fmt == "pprof":
            for role, source in (("base", base_name), ("head", head_name)):
                out[f"{name}.{role}.pb.gz"] = pprof_bytes(a, role, f"ttfg explain {a.case}, {role}: {source}")
        else:
            out[f"{name}.speedscope.json"] = speedscope_json(a, f"ttfg explain {a.case}: base {base_name} vs head "
                                                               f"{head_name}")
    return out


__all__ = ["FORMATS", "SPEEDSCOPE_SCHEMA", "files", "has_rows", "pprof_bytes", "profile_class", "series", "slug",
           "speedscope_json"]
