"""Deep-learning layers written in NumPy, forward passes in float32: dense layers,
softmax, attention, convolution by slicing loops, pooling and layer normalization.
"""

import numpy


def _f32(rng, *shape, scale=1.0):
    return (scale * rng.standard_normal(shape)).astype(numpy.float32)


def mlp(np, x, w1, b1, w2, b2, w3, b3):
    """A three-layer perceptron: two dense layers with ReLU, then a linear one."""
    h = np.maximum(x @ w1 + b1, 0.0)
    h = np.maximum(h @ w2 + b2, 0.0)
    return h @ w3 + b3


def mlp_inputs(n, rng):
    width = 2 * n
    return (_f32(rng, n, n), _f32(rng, n, width, scale=n ** -0.5), _f32(rng, width),
            _f32(rng, width, width, scale=width ** -0.5), _f32(rng, width),
            _f32(rng, width, 10, scale=width ** -0.5), _f32(rng, 10))


def softmax(np, x):
    """The softmax of every row, shifted by the row's maximum for stability."""
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def softmax_inputs(n, rng):
    return (_f32(rng, n, 1000, scale=4.0),)


def attention(np, q, k, v):
    """Single-head scaled dot-product attention: ``softmax(Q K^T / sqrt(d)) V``."""
    scores = (q @ k.T) * (1.0 / q.shape[1] ** 0.5)
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)) @ v


def attention_inputs(n, rng):
    return (_f32(rng, n, 64), _f32(rng, n, 64), _f32(rng, n, 64))


def conv2d(np, x, w, bias):
    """A 2-D convolution layer (valid padding, stride 1) with bias, by a loop over the
    kernel's offsets: each offset multiplies a shifted window of every input channel,
    flattened, by that offset's weights."""
    c, h, wd = x.shape
    k, _, r, s = w.shape
    oh, ow = h - r + 1, wd - s + 1
    out = np.zeros((k, oh * ow), dtype=x.dtype)
    for i in range(r):
        for j in range(s):
            window = x[:, i:i + oh, j:j + ow].reshape(c, oh * ow)
            out += w[:, :, i, j] @ window
    return out.reshape(k, oh, ow) + bias[:, None, None]


def conv2d_inputs(n, rng):
    return (_f32(rng, 16, n, n), _f32(rng, 32, 16, 3, 3, scale=0.1), _f32(rng, 32))


def max_pool(np, x):
    """2x2 max pooling with stride 2 of every channel: the maximum of four strided
    slices."""
    return np.maximum(np.maximum(x[:, ::2, ::2], x[:, 1::2, ::2]),
                      np.maximum(x[:, ::2, 1::2], x[:, 1::2, 1::2]))


def max_pool_inputs(n, rng):
    return (_f32(rng, 32, n, n),)


def layer_norm(np, x, gamma, beta):
    """Layer normalization of every row: zero mean and unit variance over the features
    (the variance as the mean of squared deviations), then scaled and shifted."""
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return gamma * (x - mean) / np.sqrt(var + 1e-5) + beta


def layer_norm_inputs(n, rng):
    return (_f32(rng, n, 768), _f32(rng, 768), _f32(rng, 768))
