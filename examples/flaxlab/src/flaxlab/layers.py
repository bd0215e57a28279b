"""flaxlab's own layer code, called once per convolution when the model is traced."""


def conv_forward(conv, x):
    """One convolution of the network (an ``nnx.Conv`` on NHWC input)."""
    return conv(x)
