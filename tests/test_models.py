import numpy as np
import pytest

from ttfg import models

GOLDEN_RESNET_W0 = [-0.10524856, -0.05400444, -0.0838063]
from ttfg.measure.cases import load_model, normalize_model, parse_model
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


def test_transformer_tiny_weight_names_shapes_and_parameter_count():
    spec = models.load("transformer_tiny")
    # embed 16*64+64, position 64*32, 4 blocks of (2 norms 2*128, q/v/o 3*(64*64+64), k 64*64,
    # fc1 64*256+256, fc2 256*64+64), final norm 128, head 64+1
    assert spec.parameter_count() == 203_009
    shapes = {k: v.shape for k, v in spec.param_specs().items()}
    assert list(shapes)[:3] == ["embed.weight", "embed.bias", "position.weight"]
    assert shapes["position.weight"] == (64, 32)
    assert shapes["blocks.3.attn.heads.q.weight"] == (64, 64) and shapes["blocks.3.attn.heads.o.bias"] == (64,)
    assert "blocks.0.attn.heads.k.bias" not in shapes  # the softmax cancels a key bias: its gradient is zero
    assert shapes["blocks.0.mlp.fc1.weight"] == (256, 64) and shapes["blocks.0.mlp.fc2.weight"] == (64, 256)
    assert shapes["head.weight"] == (1, 64) and list(shapes)[-1] == "head.bias"
    assert all(w.dtype == np.float32 for w in spec.init(0).values())
    assert spec.example_input(0).shape == (1, 16, 32)


def test_transformer_tiny_options():
    spec = load_model("transformer_tiny:blocks=1,width=16,heads=2,seq=8")
    assert spec.describe() == "transformer_tiny(blocks=1,heads=2,seq=8,width=16)"
    assert spec.input_shape == (1, 16, 8) and len(spec.param_specs()) == 5 + 17
    assert normalize_model("transformer_tiny:blocks=4,width=64") == "transformer_tiny"  # the defaults
    deep = models.load("transformer_tiny", blocks=2, width=16, heads=2, seq=8).init(0)
    assert all(np.array_equal(v, deep[k]) for k, v in spec.init(0).items() if k.startswith("blocks."))
    with pytest.raises(ValueError, match="divisible by heads"):
        models.load("transformer_tiny", width=10, heads=4)
    with pytest.raises(ValueError, match="blocks must be >= 1"):
        models.load("transformer_tiny", blocks=0)


def test_transformer_tiny_attention_is_causal():
    """A token's output depends on it and the tokens before it, never on later ones."""
    from autograd.scipy.special import erf
    import autograd.numpy as anp

    from ttfg.engines.interpret import forward
    from ttfg.engines.numpy_ops import NumpyOps

    spec = load_model("transformer_tiny:blocks=2,width=16,heads=2,seq=8")
    weights, x = spec.init(0), spec.example_input(0)
    later = x.copy()
    later[:, :, 5:] += 1.0
    ops = NumpyOps(anp, erf)
    y, y_later = forward(spec.network, weights, x, ops), forward(spec.network, weights, later, ops)
    np.testing.assert_array_equal(y[..., :5], y_later[..., :5])
    assert not np.allclose(y[..., 5:], y_later[..., 5:])
