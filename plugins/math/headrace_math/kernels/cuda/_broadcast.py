"""Shape alignment and broadcast strides for the math plugin's binary CUDA kernels (elementwise,
compare, logical), mirroring kernels/cpu/_broadcast.pyx.

``broadcast`` runs on the host (metadata only) and gives the output shape plus the merged index
space: dims and, per dim, the element stride of X and of Y (0 on a dim it is broadcast over).
Kernels pass those as by-value tuples padded to MAXDIM, so a launch copies nothing, and turn a
flat output index into the two operands' offsets with the device function ``offsets``.
``binary_kernel`` is the one-thread-per-output kernel of a scalar function, compiled once per
function, and ``same_dtypes`` the operands' dtype check the three families share.
"""
from numba import cuda

MAXDIM = 8


def _align(xs, ys, axis, name):
    """X's and Y's dims padded with 1s to one rank: NumPy's trailing rule for axis == -1 or equal
    ranks, else Paddle's: the lower-rank operand's dims start at dim ``axis`` of the other, after
    dropping its trailing 1s that would stick out."""
    nx, ny = len(xs), len(ys)
    if axis == -1 or nx == ny:
        r = max(nx, ny)
        return (1,) * (r - nx) + xs, (1,) * (r - ny) + ys
    if nx > ny:
        ty = ny
        while ty > 1 and ys[ty - 1] == 1 and axis + ty > nx:
            ty -= 1
        if not 0 <= axis <= nx - ty:
            raise ValueError(f"{name}: axis={axis} does not align Y{list(ys)} inside "
                             f"X{list(xs)}")
        return xs, (1,) * axis + ys[:ty] + (1,) * (nx - ty - axis)
    tx = nx
    while tx > 1 and xs[tx - 1] == 1 and axis + tx > ny:
        tx -= 1
    if not 0 <= axis <= ny - tx:
        raise ValueError(f"{name}: axis={axis} does not align X{list(xs)} inside Y{list(ys)}")
    return (1,) * axis + xs[:tx] + (1,) * (ny - tx - axis), ys


def padded_dims(xshape, yshape, axis, name):
    """(px, py, out_shape): X's and Y's dims at the output's rank, and the output shape;
    ValueError as the CPU kernel's when they do not broadcast."""
    xs, ys = tuple(int(d) for d in xshape), tuple(int(d) for d in yshape)
    px, py = _align(xs, ys, axis, name)
    if len(px) > MAXDIM:
        raise ValueError(f"{name}: rank {len(px)} exceeds {MAXDIM} dims")
    out = []
    for k, (a, b) in enumerate(zip(px, py)):
        if a != b and a != 1 and b != 1:
            raise ValueError(f"{name}: X{list(xs)} and Y{list(ys)} cannot be broadcast "
                             f"(axis={axis}): dim {k} is {a} vs {b}")
        out.append(b if a == 1 else a)
    return px, py, tuple(out)


def strides(dims, shape):
    """Element strides of a contiguous operand of ``dims`` over the index space ``shape`` (0 on
    the dims it is broadcast over)."""
    out, s = [0] * len(dims), 1
    for k in range(len(dims) - 1, -1, -1):
        out[k] = 0 if dims[k] == 1 and shape[k] != 1 else s
        s *= dims[k]
    return out


def merge(shape, sx, sy):
    """(dims, sx, sy, nd) padded to MAXDIM: size-1 dims dropped and neighbours that broadcast
    alike merged (fewer divisions per element), as the CPU kernels' walk."""
    dims, mx, my = [], [], []
    for d, a, b in zip(shape, sx, sy):
        if d == 1:
            continue
        if dims and (mx[-1] == 0) == (a == 0) and (my[-1] == 0) == (b == 0) and \
                (mx[-1] == 0 or mx[-1] == a * d) and (my[-1] == 0 or my[-1] == b * d):
            dims[-1] *= d
            mx[-1], my[-1] = a, b
            continue
        dims.append(d)
        mx.append(a)
        my.append(b)
    if not dims:
        dims, mx, my = [1], [0], [0]
    nd = len(dims)
    pad = MAXDIM - nd
    return tuple(dims + [1] * pad), tuple(mx + [0] * pad), tuple(my + [0] * pad), nd


def broadcast(xshape, yshape, axis, name):
    """(out_shape, dims, sx, sy, nd) of X op Y: the output shape and its merged index space."""
    px, py, out = padded_dims(xshape, yshape, axis, name)
    return (out,) + merge(out, strides(px, out), strides(py, out))


@cuda.jit(device=True)
def offsets(i, dims, sx, sy, nd):
    """X's and Y's element offsets at the flat output index ``i``."""
    ox = 0
    oy = 0
    for d in range(nd - 1, -1, -1):
        c = i % dims[d]
        i //= dims[d]
        ox += c * sx[d]
        oy += c * sy[d]
    return ox, oy


def _binary(fn):
    @cuda.jit
    def k(x, y, out, dims, sx, sy, nd):
        i = cuda.grid(1)
        if i < out.size:
            ox, oy = offsets(i, dims, sx, sy, nd)
            out[i] = fn(x[ox], y[oy])
    return k


_BINARY = {}


def binary_kernel(fn):
    """The kernel (x, y, out, dims, sx, sy, nd) with out[i] = fn(X's and Y's elements at i),
    one thread per output element; compiled once per scalar function ``fn``."""
    k = _BINARY.get(fn)
    if k is None:
        k = _BINARY[fn] = _binary(cuda.jit(device=True)(fn))
    return k


def same_dtypes(name, x, y, supported):
    """X and Y must share a dtype among ``supported``; the CPU kernels' errors."""
    if x.dtype != y.dtype:
        raise TypeError(f"{name}: X is {x.dtype} but Y is {y.dtype}")
    if str(x.dtype) not in supported:
        raise TypeError(f"{name}: dtype {x.dtype} not supported ({', '.join(supported)})")
