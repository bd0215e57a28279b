"""Every backend x model x supported variant agrees with the float64 reference.

``make test`` checks every backend and variant on resnet15's small model, ConvNeXt's
small model through the backends that compile nothing, and the transformer's small model
(one block) through every backend but Inductor (11 cases, about 9 s here); ConvNeXt
through the compiling backends (Inductor 20-40 s a case here, jax 4-16 s, aot_eager
2-4 s), the transformer through Inductor (5-30 s a case) and the full-size models are
``full`` (``make test-all``).
"""

import numpy as np
import pytest

import ttfg
from ttfg import engines
from ttfg.measure.cases import Case, load_model, select
from ttfg.measure.check import DEFAULT_TOLERANCE, run_check
from ttfg.errors import Unsupported, UsageError
from ttfg.engines.reference import reference_gradient, worst_error

from .conftest import SMALL_MODELS

ALL_SMALL = select(list(SMALL_MODELS.values()), ["all"], ["all"])[0]
#: Backends whose ConvNeXt cases are left to ``make test-all``.
COMPILING = ("jax.jit", "jax.eager", "torch.compile", "torch.compile.aot_eager")


def tiered(case: Case):
    full = (case.model == SMALL_MODELS["convnext_tiny"] and case.backend in COMPILING
            or case.model == SMALL_MODELS["transformer_tiny"] and case.backend == "torch.compile")
    return pytest.param(case, id=case.id, marks=[pytest.mark.full] if full else [])


@pytest.mark.parametrize("case", [tiered(c) for c in ALL_SMALL])
def test_every_variant_agrees_with_reference_on_small_models(case: Case):
    (result,) = run_check([case])
    assert result.status == "ok", f"{case.id}: {result.status} {result.detail} worst={result.worst_error}"
    assert result.worst_error <= DEFAULT_TOLERANCE


@pytest.mark.slow
@pytest.mark.full
@pytest.mark.parametrize("model", ["resnet15", "convnext_tiny", "transformer_tiny"])
def test_full_models_through_every_backend(model):
    cases, skipped = select([model], ["all"], ["default"])
    assert len(cases) == len(engines.names()) and not skipped
    results = run_check(cases)
    bad = [(r.case_id, r.status, r.worst_error, r.detail) for r in results if r.status != "ok"]
    assert not bad
    assert max(r.worst_error for r in results) <= DEFAULT_TOLERANCE


def test_gradient_api_keys_and_shapes_match_weights():
    spec = load_model(SMALL_MODELS["convnext_tiny"])
    weights, x = spec.init(0), spec.example_input(0)
    loss, grads = ttfg.gradient("jax.jit", spec, weights, x, chain="scan")
    assert list(grads) == list(weights)
    assert all(grads[k].shape == weights[k].shape for k in weights)
    ref_loss, ref = reference_gradient(spec, weights, x)
    assert worst_error(grads, ref)[0] < 1e-4
    assert abs(loss - ref_loss) <= 1e-4 * abs(ref_loss)


def test_reference_is_float64_and_matches_finite_differences():
    spec = load_model("resnet15:blocks=2")
    weights, x = spec.init(0), spec.example_input(0)
    loss, grads = reference_gradient(spec, weights, x)
    assert grads["blocks.0.conv1.bias"].dtype == np.float64
    from ttfg.engines.autograd_numpy import numpy_loss

    f = numpy_loss(spec, np.float64)
    w64 = {k: v.astype(np.float64) for k, v in weights.items()}
    eps = 1e-6
    for idx in range(4):
        plus = dict(w64, **{"blocks.1.conv2.bias": w64["blocks.1.conv2.bias"] + eps * np.eye(4)[idx]})
        minus = dict(w64, **{"blocks.1.conv2.bias": w64["blocks.1.conv2.bias"] - eps * np.eye(4)[idx]})
        fd = (f(plus, x.astype(np.float64)) - f(minus, x.astype(np.float64))) / (2 * eps)
        assert fd == pytest.approx(grads["blocks.1.conv2.bias"][idx], rel=1e-6)


def test_wrong_weight_keys_and_shapes_are_named():
    spec = load_model("resnet15:blocks=2")
    weights, x = spec.init(0), spec.example_input(0)
    missing = {k: v for k, v in weights.items() if k != "blocks.1.conv2.bias"}
    with pytest.raises(UsageError, match="missing 'blocks.1.conv2.bias'"):
        ttfg.gradient("autograd", spec, missing, x)
    with pytest.raises(UsageError, match="unexpected 'blocks.9.conv1.weight'"):
        ttfg.gradient("autograd", spec, {**weights, "blocks.9.conv1.weight": weights["blocks.0.conv1.weight"]}, x)
    with pytest.raises(UsageError, match=r"'blocks.0.conv1.weight' has shape \(4, 4, 1, 1\)"):
        ttfg.gradient("autograd", spec, {**weights, "blocks.0.conv1.weight": np.zeros((4, 4, 1, 1), np.float32)}, x)
    with pytest.raises(UsageError, match="input has shape"):
        ttfg.gradient("autograd", spec, weights, np.zeros((1, 3, 2, 2), np.float32))


def test_unknown_backend_and_variant_are_named():
    spec = load_model("resnet15:blocks=1")
    weights, x = spec.init(0), spec.example_input(0)
    with pytest.raises(UsageError, match="unknown backend 'jax.pmap'.*jax.jit"):
        ttfg.gradient("jax.pmap", spec, weights, x)
    with pytest.raises(UsageError, match="unknown variant axis 'dtype'"):
        ttfg.gradient("autograd", spec, weights, x, dtype="bf16")
    with pytest.raises(UsageError, match="unknown value 'vmap' for variant axis 'chain'"):
        ttfg.gradient("autograd", spec, weights, x, chain="vmap")


def test_unsupported_variant_is_a_skip_with_a_reason():
    spec = load_model("resnet15:blocks=1")
    with pytest.raises(Unsupported, match="autograd does not support chain=scan: autograd has no scan"):
        ttfg.gradient("autograd", spec, spec.init(0), spec.example_input(0), chain="scan")
    cases, skipped = select(["resnet15"], ["torch.eager"], ["chain=scan"])
    assert not cases and "nothing to share" in skipped[0].reason


def test_backends_lists_every_backend():
    assert ttfg.backends() == [
        "jax.jit", "jax.eager", "torch.eager", "torch.func", "torch.compile", "torch.compile.aot_eager", "autograd",
    ]
