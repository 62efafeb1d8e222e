"""Image filters written with shifted slices: each output pixel from its neighbourhood in
the input. The images are float32, as image pipelines keep them.
"""

import numpy


def _image(n, rng):
    return rng.random((n, n), dtype=numpy.float32)


def box_blur(np, img):
    """The 3x3 box blur: the mean of each pixel's neighbourhood (the border dropped), as a
    sum of nine shifted slices."""
    h, w = img.shape
    out = np.zeros((h - 2, w - 2), dtype=img.dtype)
    for di in range(3):
        for dj in range(3):
            out += img[di:h - 2 + di, dj:w - 2 + dj]
    return out / 9.0


def box_blur_inputs(n, rng):
    return (_image(n, rng),)


def sobel(np, img):
    """The Sobel edge magnitude: horizontal and vertical 3x3 gradients from shifted slices,
    then ``sqrt(gx^2 + gy^2)``."""
    gx = (img[:-2, 2:] + 2.0 * img[1:-1, 2:] + img[2:, 2:]
          - img[:-2, :-2] - 2.0 * img[1:-1, :-2] - img[2:, :-2])
    gy = (img[2:, :-2] + 2.0 * img[2:, 1:-1] + img[2:, 2:]
          - img[:-2, :-2] - 2.0 * img[:-2, 1:-1] - img[:-2, 2:])
    return np.sqrt(gx * gx + gy * gy)


def sobel_inputs(n, rng):
    return (_image(n, rng),)


# The binomial 5-tap approximation of a Gaussian.
GAUSS5 = (1.0 / 16, 4.0 / 16, 6.0 / 16, 4.0 / 16, 1.0 / 16)


def gaussian_blur(np, img):
    """A separable 5-tap Gaussian blur: the taps along the rows, then along the columns of
    the result (the border of two pixels dropped)."""
    h, w = img.shape
    rows = GAUSS5[0] * img[:, 0:w - 4]
    for t in range(1, 5):
        rows = rows + GAUSS5[t] * img[:, t:w - 4 + t]
    out = GAUSS5[0] * rows[0:h - 4]
    for t in range(1, 5):
        out = out + GAUSS5[t] * rows[t:h - 4 + t]
    return out


def gaussian_blur_inputs(n, rng):
    return (_image(n, rng),)


def erosion(np, img, passes):
    """Grey-scale erosion by a 3x3 square, ``passes`` times: each interior pixel becomes the
    least of its neighbourhood (``minimum`` of shifted slices)."""
    for _ in range(passes):
        m = np.minimum(img[:-2, 1:-1], img[2:, 1:-1])
        m = np.minimum(m, np.minimum(img[1:-1, :-2], img[1:-1, 2:]))
        m = np.minimum(m, np.minimum(img[:-2, :-2], img[:-2, 2:]))
        m = np.minimum(m, np.minimum(img[2:, :-2], img[2:, 2:]))
        img[1:-1, 1:-1] = np.minimum(m, img[1:-1, 1:-1])
    return img


def erosion_inputs(n, rng):
    return (_image(n, rng), 3)
