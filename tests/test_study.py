"""Studies end to end on cheap backends; the statistics themselves are tested in test_stats."""

import json

import pytest

from ttfg.errors import UsageError
from ttfg.measure.runner import RunSettings
from ttfg.decide.study import depth_models, effect_cases, run_study


def test_depth_sweeps():
    assert [d for _, d in depth_models("resnet15")] == [1, 2, 4, 8, 15, 30, 60]
    assert depth_models("convnext_tiny")[-1] == ("convnext_tiny:depths=3x3x9x3", 18)
    assert depth_models("transformer_tiny") == [(f"transformer_tiny:blocks={d}", d) for d in (1, 2, 4, 8)]
    with pytest.raises(UsageError, match="bare model name"):
        depth_models("resnet15:blocks=3")


def test_effect_arms_follow_backend_support():
    pairs, notes = effect_cases("chain", "resnet15", ["jax.jit", "autograd"])
    assert [(b, c.id, t.id) for b, c, t in pairs] == [
        ("jax.jit", "resnet15/jax.jit/params=args,chain=unrolled", "resnet15/jax.jit/params=args,chain=scan")]
    assert "autograd: does not support both chain=unrolled and chain=scan" in notes
    pairs, _ = effect_cases("params", "resnet15", ["torch.compile"])
    assert pairs[0][2].variant_dict == {"params": "closure", "chain": "unrolled"}


@pytest.mark.slow
@pytest.mark.parametrize("repeat", [1, pytest.param(2, marks=pytest.mark.full)])
@pytest.mark.full  # every backend at three depths (about 25 s): make test-all and CI run it
def test_depth_study_fits_every_backend_and_saves_samples(tmp_path, repeat):
    """Seven depths x ``repeat`` cold processes; one per depth in make test (the fit then
    bootstraps residuals), two in make test-all."""
    out = tmp_path / "depth.json"
    result = run_study("depth", "resnet15", ["autograd"], RunSettings(repeat=repeat), out)
    first = next(r for r in result.depth if r.metric == "first_grad_s")
    assert first.fit is not None and first.fit.k_ci_low <= first.fit.k <= first.fit.k_ci_high
    assert [d for d, _ in first.points] == [1, 2, 4, 8, 15, 30, 60]
    # The eager tape grows with depth: a 60-block gradient costs more than a 1-block one.
    assert first.points[-1][1] > first.points[0][1]
    saved = json.loads(out.read_text())
    assert saved["study"]["depth"][0]["backend"] == "autograd"
    assert sum(len(c["samples"]) for c in saved["cases"]) == 7 * repeat


def test_effect_study_without_a_two_armed_backend_is_refused():
    with pytest.raises(UsageError, match="no selected backend supports both arms"):
        run_study("params", "resnet15", ["autograd"], RunSettings(repeat=2), None)
