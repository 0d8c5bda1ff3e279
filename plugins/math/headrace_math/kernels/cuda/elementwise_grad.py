"""elementwise_{add,sub,mul,div,max,min,pow}_grad on CUDA: (X, Y[, Out], Out@GRAD) ->
(X@GRAD, Y@GRAD), mirroring kernels/cpu/elementwise.pyx's grad ops.

Each side's derivative times Out@GRAD is a device function, evaluated in double and rounded
once on store, as on the CPU. An operand with the output's size gets one thread per element.
An operand that was broadcast gets its gradient summed over the broadcast dims with no
full-size intermediate: one block per element of the operand, whose threads stride over the
output positions it was broadcast to, form the derivative there and accumulate in float64,
then meet in a shared-memory tree (cuda_rows.block_reduce); no atomics. add and sub pass
Out@GRAD through to an operand that was not broadcast (no copy where aliasing is allowed).
Gradients nobody wants (info.wants) are not computed (None). Nothing is read on the host.
"""
import math

from numba import cuda, float64

from headrace.devices.cuda import current_stream   # the running executor's stream
from headrace.kernels.cuda_launch import ROW_THREADS, device_copy, flat, grid
from headrace.kernels.cuda_rows import block_reduce

from ._broadcast import MAXDIM, merge, offsets, padded_dims, strides

FLOATS = ("float32", "float64")


# -- each side's Out@GRAD * dOut/dX or dOut/dY, from doubles a=X, b=Y, o=Out, d=Out@GRAD ----

def _d(a, b, o, d):
    return d


def _neg_d(a, b, o, d):
    return -d


def _mul_x(a, b, o, d):
    return d * b


def _mul_y(a, b, o, d):
    return d * a


def _div_x(a, b, o, d):
    return d / b


def _div_y(a, b, o, d):
    return -d * o / b


# Paddle routes ties (and NaN) to Y.
def _max_x(a, b, o, d):
    return d if a > b else 0.0


def _max_y(a, b, o, d):
    return 0.0 if a > b else d


def _min_x(a, b, o, d):
    return d if a < b else 0.0


def _min_y(a, b, o, d):
    return 0.0 if a < b else d


def _pow_x(a, b, o, d):
    return d * b * a ** (b - 1.0)


def _pow_y(a, b, o, d):
    # 0 at X == 0 (0**y is flat for y > 0); C's log: NaN below 0 (Python's math.log raises
    # there, in the simulator).
    if a == 0:
        return 0.0
    if a > 0:
        return d * a ** b * math.log(a)
    return math.nan


_SIDES = {
    "elementwise_add_grad": (_d, _d),
    "elementwise_sub_grad": (_d, _neg_d),
    "elementwise_mul_grad": (_mul_x, _mul_y),
    "elementwise_div_grad": (_div_x, _div_y),
    "elementwise_max_grad": (_max_x, _max_y),
    "elementwise_min_grad": (_min_x, _min_y),
    "elementwise_pow_grad": (_pow_x, _pow_y),
}


def _direct_kernel(fn):
    # The operand has the output's size: its element i is output position i.
    @cuda.jit
    def k(x, y, o, d, res, dims, sx, sy, nd):
        i = cuda.grid(1)
        if i < res.size:
            ox, oy = offsets(i, dims, sx, sy, nd)
            res[i] = fn(float64(x[ox]), float64(y[oy]), float64(o[i]), float64(d[i]))
    return k


@cuda.jit(device=True)
def _walk(r, dims, so, sx, sy, n, po, px, py):
    """Flat index ``r`` over the ``n`` ``dims`` added to the offsets (po, px, py) in Out, X and
    Y with their strides ``so``, ``sx``, ``sy``."""
    for q in range(n - 1, -1, -1):
        c = r % dims[q]
        r //= dims[q]
        po += c * so[q]
        px += c * sx[q]
        py += c * sy[q]
    return po, px, py


def _reduce_kernel(fn):
    # One block per element j of the broadcast operand: j's coordinates over the kept dims
    # (kd) give its base offsets in Out/X/Y; its M output positions are the coordinates over
    # the reduced dims (rd), visited by the block's threads in strides of ROW_THREADS.
    @cuda.jit
    def k(x, y, o, d, res, kd, ko, kx, ky, nk, rd, ro, rx, ry, nr, M):
        buf = cuda.shared.array(ROW_THREADS, float64)
        j = cuda.blockIdx.x
        t = cuda.threadIdx.x
        bo, bx, by = _walk(j, kd, ko, kx, ky, nk, 0, 0, 0)
        acc = 0.0
        m = t
        while m < M:
            po, px, py = _walk(m, rd, ro, rx, ry, nr, bo, bx, by)
            acc += fn(float64(x[px]), float64(y[py]), float64(o[po]), float64(d[po]))
            m += ROW_THREADS
        acc = block_reduce(buf, acc, False)
        if t == 0:
            res[j] = acc
    return k


_COMPILED = {}


def _compiled(name, for_x, reduced):
    key = (name, for_x, reduced)
    k = _COMPILED.get(key)
    if k is None:
        fn = cuda.jit(device=True)(_SIDES[name][0 if for_x else 1])
        k = _COMPILED[key] = (_reduce_kernel if reduced else _direct_kernel)(fn)
    return k


def _pad(values, fill):
    return tuple(values) + (fill,) * (MAXDIM - len(values))


def _split(shape, ps, sx, sy):
    """The output dims an operand of padded dims ``ps`` keeps and those it is summed over, as
    (kd, ko, kx, ky, nk, rd, ro, rx, ry, nr): dims, Out/X/Y strides and count of each, padded
    to MAXDIM; size-1 dims dropped."""
    so = strides(shape, shape)
    keep = [(n, so[k], sx[k], sy[k]) for k, n in enumerate(shape) if n != 1 and ps[k] != 1]
    red = [(n, so[k], sx[k], sy[k]) for k, n in enumerate(shape) if n != 1 and ps[k] == 1]
    out = []
    for part in (keep, red):
        cols = list(zip(*part)) or [(), (), (), ()]
        out += [_pad(cols[0], 1), _pad(cols[1], 0), _pad(cols[2], 0), _pad(cols[3], 0),
                len(part)]
    return out


class ElementwiseGrad:
    def __init__(self, name, attrs, info=None):
        self.name, self.axis = name, attrs.get("axis", -1)
        self.reads_out = name == "elementwise_div_grad"
        # add's two sides and sub's X side are Out@GRAD itself where not broadcast.
        self.passes = (name == "elementwise_add_grad", name in ("elementwise_add_grad",
                                                                "elementwise_sub_grad"))
        self.want_x = info is None or info.wants("X@GRAD")
        self.want_y = info is None or info.wants("Y@GRAD")
        # A gradient may be Out@GRAD itself (no copy) unless a variable involved is
        # persistable (docs/kernels.md); called directly, without an info, it is copied.
        self.alias = info is not None and info.may_alias("Out@GRAD", "X@GRAD") and \
            info.may_alias("Out@GRAD", "Y@GRAD")

    def __call__(self, x, y, third, fourth=None):
        name = self.name
        if self.reads_out and fourth is None:
            raise ValueError(f"{name}: takes X, Y, Out and Out@GRAD")
        g = fourth if self.reads_out else third
        o = third if self.reads_out else g
        if str(x.dtype) not in FLOATS:
            raise TypeError(f"{name}: X has dtype {x.dtype}, expected float32 or float64")
        if y.dtype != x.dtype or g.dtype != x.dtype or o.dtype != x.dtype:
            raise TypeError(f"{name}: X, Y" + (", Out" if self.reads_out else "") +
                            f" and Out@GRAD must share one dtype, got {x.dtype}, {y.dtype}" +
                            (f", {o.dtype}" if self.reads_out else "") + f" and {g.dtype}")
        px, py, shape = padded_dims(x.shape, y.shape, self.axis, name)
        if tuple(g.shape) != shape:
            raise ValueError(f"{name}: Out@GRAD has shape {list(g.shape)}, expected the "
                             f"broadcast shape {list(shape)} of X{list(x.shape)} and "
                             f"Y{list(y.shape)} (axis={self.axis})")
        if self.reads_out and tuple(o.shape) != shape:
            raise ValueError(f"{name}: Out has shape {list(o.shape)}, expected {list(shape)}")
        sx, sy = strides(px, shape), strides(py, shape)
        args = (shape, px, py, sx, sy, x, y, o, g)
        dx = self._one(True, *args) if self.want_x else None
        dy = self._one(False, *args) if self.want_y else None
        return (dx, dy)

    def _one(self, for_x, shape, px, py, sx, sy, x, y, o, g):
        target = x if for_x else y
        stream = current_stream()
        if target.size == g.size and self.passes[for_x]:
            # Out@GRAD itself in the operand's shape, or a copy when aliasing is not allowed.
            res = g if self.alias else device_copy(g)
            return res.reshape(target.shape) if res.shape != target.shape else res
        res = cuda.device_array(target.shape, dtype=target.dtype, stream=stream)
        if res.size == 0:
            return res
        ins = (flat(x), flat(y), flat(o), flat(g), flat(res))
        if target.size == g.size:
            blocks, threads = grid(res.size)
            _compiled(self.name, for_x, False)[blocks, threads, stream](
                *ins, *merge(shape, sx, sy))
            return res
        kd, ko, kx, ky, nk, rd, ro, rx, ry, nr = _split(shape, px if for_x else py, sx, sy)
        M = 1
        for n in rd:
            M *= n
        _compiled(self.name, for_x, True)[res.size, ROW_THREADS, stream](
            *ins, kd, ko, kx, ky, nk, rd, ro, rx, ry, nr, M)
        return res


def _maker(name):
    def make(attrs, info=None):
        return ElementwiseGrad(name, attrs, info)
    make.__name__ = name
    return make


KERNELS = [(name, _maker(name), FLOATS) for name in _SIDES]
