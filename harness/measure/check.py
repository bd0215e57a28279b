"""``ttfg check``: every selected case's gradient against the float64 reference.

Correctness comes before timing: a benchmark of a wrong gradient is worthless. Cases
run in this process, one after another (compile caches are irrelevant here).
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass
from typing import Callable, Iterable

from .cases import Case, Skipped
from ..engines.contract import gradient
from ..errors import Unsupported
from ..engines.reference import reference_gradient, relative_error, worst_error

DEFAULT_TOLERANCE = 1e-4


@dataclass
class CheckResult:
    case_id: str
    status: str  # "ok", "mismatch", "error", "skipped", "unchecked" (a function without a reference: ran)
    loss: float | None = None
    loss_error: float | None = None
    worst_error: float | None = None
    worst_tensor: str = ""
    seconds: float | None = None
    detail: str = ""


#: Why a function case's gradient is not compared: ``case()`` returned a call without a reference.
NO_REFERENCE = "ran; not compared: the case gave no reference (return (fn, args, reference) to compare)"


def check_function(case: Case, tolerance: float = DEFAULT_TOLERANCE) -> CheckResult:
    """Run a library's own function once (import, ``case()``, ``fn(*args)``): it must run and give a finite loss.

    With a reference (``case()`` returned ``(fn, args, reference)``), ``fn(*args)`` is compared with
    ``reference(*args)`` leaf by leaf (:func:`compare_results`): ``ok`` or ``mismatch`` as for a model's case.
    Without one, status ``unchecked``, never ``ok``: nothing says its gradient is right. A crash or a
    non-finite loss is an ``error``, as for a model's case.
    """
    import math

    from ..engines import function

    start = time.perf_counter()
    try:
        engine = function.build(case.model, function.load(case.model))
        result = engine.gradient()
        loss, _ = engine.to_numpy(result)
    except Exception as exc:  # the library's code: its failure is a result
        return CheckResult(case.id, "error", detail=traceback.format_exception_only(type(exc), exc)[-1].strip())
    seconds = time.perf_counter() - start
    if loss is not None and not math.isfinite(loss):
        return CheckResult(case.id, "error", loss=loss, seconds=seconds, detail=f"the loss is {loss}")
    if engine.reference is None:
        return CheckResult(case.id, "unchecked", loss=loss, seconds=seconds, detail=NO_REFERENCE)
    try:
        expected = function.ready(engine.reference(*engine.args))
    except Exception as exc:  # the library's reference is its code too
        tail = traceback.format_exception_only(type(exc), exc)[-1].strip()
        return CheckResult(case.id, "error", loss=loss, seconds=seconds, detail=f"the reference failed: {tail}")
    return compare_results(case.id, result, expected, tolerance, loss, seconds)


def compare_results(case_id: str, result, expected, tolerance: float, loss: float | None,
                    seconds: float | None) -> CheckResult:
    """``fn``'s result against the reference's, leaf by leaf: the same leaves and shapes, each within
    ``tolerance`` (relative to the leaf's scale), else ``mismatch`` naming the worst leaf."""
    from ..engines import function

    got, want = function.numeric_leaves(result), function.numeric_leaves(expected)
    if not want:
        return CheckResult(case_id, "error", loss=loss, seconds=seconds,
                           detail="the reference returned no numbers to compare with")
    if set(got) != set(want) or any(got[k].shape != want[k].shape for k in want):
        differ = sorted(set(got) ^ set(want)) or [k for k in want if got[k].shape != want[k].shape]
        return CheckResult(case_id, "error", loss=loss, seconds=seconds,
                           detail=f"the result and the reference differ in structure or shape at {differ[0]}")
    worst, where = worst_error(got, want)
    ref_loss = function.first_scalar(expected)
    loss_err = relative_error(loss, ref_loss) if loss is not None and ref_loss is not None else None
    status = "ok" if max(worst, loss_err or 0.0) <= tolerance else "mismatch"
    return CheckResult(case_id, status, loss, loss_err, worst, where, seconds, "compared with the case's reference")


def check_case(case: Case, reference, tolerance: float) -> CheckResult:
    spec = case.spec
    weights, x = spec.init(0), spec.example_input(0)
    ref_loss, ref_grads = reference
    start = time.perf_counter()
    try:
        loss, grads = gradient(case.backend, spec, weights, x, **case.variant_dict)
    except Unsupported as exc:
        return CheckResult(case.id, "skipped", detail=str(exc))
    except Exception as exc:  # a broken backend is a result, not a crash of the matrix
        tail = traceback.format_exception_only(type(exc), exc)[-1].strip()
        return CheckResult(case.id, "error", detail=tail)
    seconds = time.perf_counter() - start
    if set(grads) != set(ref_grads) or any(grads[k].shape != ref_grads[k].shape for k in ref_grads):
        return CheckResult(case.id, "error", loss=loss, seconds=seconds,
                           detail="gradient keys or shapes differ from the weights")
    worst, where = worst_error(grads, ref_grads)
    loss_err = relative_error(loss, ref_loss)
    status = "ok" if max(worst, loss_err) <= tolerance else "mismatch"
    return CheckResult(case.id, status, loss, loss_err, worst, where, seconds)


def run_check(
    cases: Iterable[Case],
    skipped: Iterable[Skipped] = (),
    tolerance: float = DEFAULT_TOLERANCE,
    on_result: Callable[[CheckResult], None] | None = None,
) -> list[CheckResult]:
    """Check each case against its model's float64 reference (computed once per model)."""
    results = [CheckResult(s.id, "skipped", detail=s.reason) for s in skipped]
    references: dict[str, tuple] = {}
    for case in cases:
        if case.is_function:
            results.append(check_function(case, tolerance))
            if on_result:
                on_result(results[-1])
            continue
        if case.model not in references:
            spec = case.spec
            references[case.model] = reference_gradient(spec, spec.init(0), spec.example_input(0))
        result = check_case(case, references[case.model], tolerance)
        results.append(result)
        if on_result:
            on_result(result)
    return results


def exit_code(results: list[CheckResult]) -> int:
    """0 all ran cases agree; 1 any mismatch or error; 2 nothing could run."""
    ran = [r for r in results if r.status != "skipped"]
    if not ran:
        return 2
    return 1 if any(r.status in ("mismatch", "error") for r in ran) else 0


__all__ = ["CheckResult", "DEFAULT_TOLERANCE", "check_case", "exit_code", "run_check"]
