"""Index arithmetic of 4-D images shared by the CUDA conv and pool kernels: a flat index of an
[N, C, H, W] (NCHW) or [N, H, W, C] (NHWC) tensor as its (row, column, image, channel), and a
channel plane's first offset and pixel stride."""
from numba import cuda


@cuda.jit(device=True)
def pixel_of(e, C, H, W, nhwc):
    """(y, x, n, c) of flat index ``e`` of an N x C x H x W image tensor in either layout."""
    if nhwc:
        return (e // (C * W)) % H, (e // C) % W, e // (C * W * H), e % C
    return (e // W) % H, e % W, e // (W * H * C), (e // (W * H)) % C


@cuda.jit(device=True)
def plane_of(n, c, C, H, W, nhwc):
    """(offset of pixel (0, 0), stride between neighbouring pixels) of image n's channel c."""
    if nhwc:
        return n * H * W * C + c, C
    return (n * C + c) * H * W, 1
