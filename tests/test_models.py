import numpy as np
import pytest

from ttfg import models

GOLDEN_RESNET_W0 = [-0.10524856, -0.05400444, -0.0838063]
from ttfg.measure.cases import load_model, parse_model
from ttfg.errors import UsageError


def test_resnet15_weight_names_and_shapes_are_the_public_contract():
    spec = models.load("resnet15")
    weights = spec.init(0)
    expected = [f"blocks.{k}.{conv}.{p}" for k in range(15) for conv in ("conv1", "conv2") for p in ("weight", "bias")]
    assert list(weights) == expected
    assert weights["blocks.0.conv1.weight"].shape == (4, 4, 3, 3)
    assert weights["blocks.14.conv2.bias"].shape == (4,)
    assert all(w.dtype == np.float32 for w in weights.values())
    assert spec.example_input(0).shape == (1, 4, 2, 2)


def test_convnext_tiny_matches_convnext_t():
    spec = models.load("convnext_tiny")
    assert spec.parameter_count() == 27_817_825  # ConvNeXt-T trunk with a 1-class head, 1 input channel
    shapes = {k: v.shape for k, v in spec.param_specs().items()}
    assert shapes["stem.conv.weight"] == (96, 1, 4, 4)
    assert shapes["stages.2.blocks.8.dwconv.weight"] == (384, 1, 7, 7)
    assert shapes["stages.3.blocks.2.pwconv1.weight"] == (3072, 768)
    assert shapes["stages.1.downsample.conv.weight"] == (192, 96, 2, 2)
    assert shapes["head.fc.weight"] == (1, 768)
    assert "stages.0.downsample.conv.weight" not in shapes
    assert np.all(spec.init(0)["stages.0.blocks.0.scale.gamma"] == np.float32(1e-6))
    assert spec.example_input(0).shape == (1, 1, 32, 32)


def test_init_is_deterministic_and_seeded():
    spec = models.load("resnet15")
    a, b, c = spec.init(0), spec.init(0), spec.init(1)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not np.array_equal(a["blocks.0.conv1.weight"], c["blocks.0.conv1.weight"])
    # Golden values: the same on every machine for the pinned NumPy; a change here
    # silently changes every benchmark's inputs, so it must be deliberate.
    np.testing.assert_allclose(a["blocks.0.conv1.weight"].ravel()[:3], GOLDEN_RESNET_W0, rtol=0, atol=1e-7)


def test_deeper_model_shares_the_first_blocks_weights():
    short, deep = models.load("resnet15", blocks=2).init(0), models.load("resnet15", blocks=30).init(0)
    assert len(deep) == 120
    assert all(np.array_equal(short[k], deep[k]) for k in short)


def test_depth_options():
    assert len(models.load("resnet15", blocks=1).init(0)) == 4
    spec = models.load("convnext_tiny", depths=(1, 1, 1, 1))
    assert not any(".blocks.1." in k for k in spec.param_specs())


@pytest.mark.parametrize("bad", [{"blocks": 0}, {"depth": 3}])
def test_bad_model_options_name_the_problem(bad):
    with pytest.raises(ValueError, match="blocks|depth"):
        models.load("resnet15", **bad)


def test_unknown_model_names_known_ones():
    with pytest.raises(KeyError, match="resnet15"):
        models.load("resnet50")
    with pytest.raises(UsageError, match="unknown model 'resnet50'"):
        parse_model("resnet50")


def test_model_selection_syntax():
    assert parse_model("resnet15:blocks=30") == ("resnet15", {"blocks": 30})
    assert parse_model("convnext_tiny:depths=1x1x3x1") == ("convnext_tiny", {"depths": (1, 1, 3, 1)})
    with pytest.raises(UsageError, match="key=value"):
        parse_model("resnet15:30")
    with pytest.raises(UsageError, match="does not take"):
        load_model("resnet15:width=3")


def test_models_import_no_framework():
    import subprocess
    import sys

    code = "import sys; from ttfg import models; models.load('convnext_tiny').init(0); assert not {'torch','jax'} & set(sys.modules)"
    subprocess.run([sys.executable, "-c", code], check=True)
