"""Matrix products on CUDA: mul (X flattened to 2-D at x_num_col_dims times Y flattened at
y_num_col_dims) and matmul / matmul_v2 (NumPy matmul: transposes, alpha, 1-D operands,
broadcast batch dims), and their grad ops, as kernels/cpu/matmul.pyx.

Every product is one launch of the core's shared tiled GEMM (headrace.kernels.cuda_gemm.gemm)
on the stored row-major matrices, transposes passed as flags and broadcast batch dims as zero
batch strides: nothing is copied or transposed in memory. The gradient of an operand broadcast
along batch dims is the per-entry GEMM into a scratch [batch, rows, cols] reduced over the
broadcast dims on the device (cuda_gemm.sum_batches); when Y is one matrix and X's batches are
stacked rows (the usual [B, M, K] @ [K, N]), Y@GRAD is a single GEMM over all B*M rows instead.
Inputs are C-contiguous device arrays; no value crosses between host and device.
"""
import math

from numba import cuda

from headrace.kernels.cuda_gemm import gemm, sum_batches
from headrace.kernels.cuda_launch import device_empty, flat, launch

DTYPES = ("float32", "float64")


@cuda.jit
def _zero(a, n):
    i = cuda.grid(1)
    if i < n:
        a[i] = 0


def _zeros(a):
    if a is not None:
        launch(_zero, a.size, flat(a), a.size)
    return a


def _float_pair(name, x, y):
    if x.dtype != y.dtype or str(x.dtype) not in DTYPES:
        raise TypeError(f"{name}: X and Y must both be float32 or float64, got "
                        f"{x.dtype} and {y.dtype}")


def _float_operands(name, x, y, g):
    if str(x.dtype) not in DTYPES:
        raise TypeError(f"{name}: X has dtype {x.dtype}, expected float32 or float64")
    if y.dtype != x.dtype or g.dtype != x.dtype:
        raise TypeError(f"{name}: X, Y and Out@GRAD must share one dtype, got "
                        f"{x.dtype}, {y.dtype} and {g.dtype}")


# -- mul --------------------------------------------------------------------------------------

def _flattened(name, xn, yn, xs, ys):
    """(M, K, N) of X flattened to [M, K] at xn and Y to [K, N] at yn, as the CPU kernel."""
    if not 0 < xn < len(xs) or not 0 < yn < len(ys):
        raise ValueError(f"{name}: x_num_col_dims={xn} / y_num_col_dims={yn} do not "
                         f"fit X{list(xs)} / Y{list(ys)}")
    M, K = math.prod(xs[:xn]), math.prod(xs[xn:])
    K2, N = math.prod(ys[:yn]), math.prod(ys[yn:])
    if K != K2:
        raise ValueError(f"{name}: X{list(xs)} flattens to [{M}, {K}] but Y{list(ys)} "
                         f"flattens to [{K2}, {N}]")
    return M, K, N


class Mul:
    def __init__(self, attrs, info=None):
        self.xn, self.yn = attrs["x_num_col_dims"], attrs["y_num_col_dims"]

    def __call__(self, x, y):
        _float_pair("mul", x, y)
        xs, ys = tuple(x.shape), tuple(y.shape)
        M, K, N = _flattened("mul", self.xn, self.yn, xs, ys)
        out = device_empty(xs[:self.xn] + ys[self.yn:], x.dtype)
        gemm(x, y, out, M, N, K)
        return (out,)


class MulGrad:
    """mul_grad on the flattened views X [M, K], Y [K, N], G [M, N]: X@GRAD = G @ Y^T,
    Y@GRAD = X^T @ G, one GEMM each; an output nobody wants is not computed (None)."""

    def __init__(self, attrs, info=None):
        self.xn, self.yn = attrs["x_num_col_dims"], attrs["y_num_col_dims"]
        self.want_x = info is None or info.wants("X@GRAD")
        self.want_y = info is None or info.wants("Y@GRAD")

    def __call__(self, x, y, dout):
        _float_operands("mul_grad", x, y, dout)
        xs, ys = tuple(x.shape), tuple(y.shape)
        M, K, N = _flattened("mul_grad", self.xn, self.yn, xs, ys)
        out_shape = xs[:self.xn] + ys[self.yn:]
        if tuple(dout.shape) != out_shape:
            raise ValueError(f"mul_grad: Out@GRAD has shape {list(dout.shape)}, expected "
                             f"Out's {list(out_shape)}")
        dx = dy = None
        # An empty contraction (N for X@GRAD, M for Y@GRAD) gives zeros through the GEMM.
        if self.want_x:     # [M, K] = G [M, N] @ (Y [K, N])^T
            dx = gemm(dout, y, device_empty(xs, x.dtype), M, K, N, trans_b=True)
        if self.want_y:     # [K, N] = (X [M, K])^T @ G [M, N]
            dy = gemm(x, dout, device_empty(ys, y.dtype), K, N, M, trans_a=True)
        return (dx, dy)


# -- matmul / matmul_v2 -----------------------------------------------------------------------

def _row_strides(dims, inner):
    """Element strides of contiguous dims ``dims`` followed by ``inner`` elements."""
    strides, s = [], inner
    for d in reversed(dims):
        strides.insert(0, s)
        s *= d
    return strides


class _Problem:
    """The shapes of X @ Y as the CPU kernel reads them: stored matrices (a 1-D X a row [1, K],
    a 1-D Y a column [K, 1], whose transpose flags are dropped), M, K, N, the broadcast batch
    dims and each operand's element strides over them (0 where broadcast)."""

    def __init__(self, name, x, y, tx, ty):
        xs, ys = tuple(x.shape), tuple(y.shape)
        nx, ny = len(xs), len(ys)
        if nx == 0 or ny == 0:
            raise ValueError(f"{name}: X{list(xs)} and Y{list(ys)} must have rank >= 1")
        self.xr, self.xc = (1, xs[0]) if nx == 1 else xs[-2:]
        self.yr, self.yc = (ys[0], 1) if ny == 1 else ys[-2:]
        self.tx, self.ty = bool(tx) and nx > 1, bool(ty) and ny > 1
        self.M, self.K = (self.xc, self.xr) if self.tx else (self.xr, self.xc)
        K2, self.N = (self.yc, self.yr) if self.ty else (self.yr, self.yc)
        if self.K != K2:
            raise ValueError(f"{name}: X{list(xs)} and Y{list(ys)} do not multiply: "
                             f"contraction dims {self.K} != {K2} (transposes {bool(tx)}, "
                             f"{bool(ty)})")
        xb, yb = xs[:-2] if nx > 2 else (), ys[:-2] if ny > 2 else ()
        nb = max(len(xb), len(yb))
        xb, yb = (1,) * (nb - len(xb)) + xb, (1,) * (nb - len(yb)) + yb
        xst = _row_strides(xb, self.xr * self.xc)
        yst = _row_strides(yb, self.yr * self.yc)
        self.batch, self.sx, self.sy = [], [], []
        self.x_keep, self.y_keep = [], []   # batch dims an operand has (not broadcast)
        for dx, dy, sx, sy in zip(xb, yb, xst, yst):
            if dx != dy and dx != 1 and dy != 1:
                raise ValueError(f"{name}: batch dims of X{list(xs)} and Y{list(ys)} cannot "
                                 f"be broadcast")
            d = dy if dx == 1 else dx
            self.batch.append(d)
            self.sx.append(sx if dx != 1 else 0)
            self.sy.append(sy if dy != 1 else 0)
            self.x_keep.append(dx == d)
            self.y_keep.append(dy == d)
        self.nbatch = math.prod(self.batch)
        shape = list(self.batch) + ([self.M] if nx > 1 else []) + ([self.N] if ny > 1 else [])
        self.out_shape = tuple(shape)   # vector . vector is 0-D (Paddle 3)


class Matmul:
    """matmul (transpose_X, transpose_Y, alpha) and matmul_v2 (trans_x, trans_y)."""

    def __init__(self, name, tx, ty, alpha):
        self.name, self.tx, self.ty, self.alpha = name, tx, ty, alpha

    def __call__(self, x, y):
        _float_pair(self.name, x, y)
        p = _Problem(self.name, x, y, self.tx, self.ty)
        out = device_empty(p.out_shape, x.dtype)
        gemm(x, y, out, p.M, p.N, p.K, p.tx, p.ty, self.alpha, lda=p.xc, ldb=p.yc,
             batch=p.batch, a_strides=p.sx, b_strides=p.sy)
        return (out,)


def _make_matmul(attrs, info=None):
    return Matmul("matmul", attrs["transpose_X"], attrs["transpose_Y"], attrs["alpha"])


def _make_matmul_v2(attrs, info=None):
    return Matmul("matmul_v2", attrs["trans_x"], attrs["trans_y"], 1.0)


# -- gradients --------------------------------------------------------------------------------
#
# With G = Out@GRAD and Out = alpha op(X) op(Y) per matrix, op(M) = M or M^T:
#   d op(X) = alpha G op(Y)^T,  d op(Y) = alpha op(X)^T G,
# so X@GRAD = alpha G op(Y)^T (or its transpose alpha op(Y) G^T when X was transposed), and
# likewise for Y: one batched GEMM each on the stored matrices, transposes as flags.


class MatmulGrad:
    """matmul_grad / matmul_v2_grad: (X, Y, Out@GRAD) -> (X@GRAD, Y@GRAD); an operand
    broadcast along batch dims gets the sum over them (see the module docstring)."""

    def __init__(self, name, tx, ty, alpha, info=None):
        self.name, self.tx, self.ty, self.alpha = name, tx, ty, alpha
        self.want_x = info is None or info.wants("X@GRAD")
        self.want_y = info is None or info.wants("Y@GRAD")

    def __call__(self, x, y, dout):
        _float_operands(self.name, x, y, dout)
        p = _Problem(self.name, x, y, self.tx, self.ty)
        # A 0-D Out's gradient may come as one element of another rank ([1] in Fluid).
        if tuple(dout.shape) != p.out_shape and not (not p.out_shape and dout.size == 1):
            raise ValueError(f"{self.name}: Out@GRAD has shape {list(dout.shape)}, expected "
                             f"Out's {list(p.out_shape)}")
        dx = device_empty(x.shape, x.dtype) if self.want_x else None
        dy = device_empty(y.shape, y.dtype) if self.want_y else None
        if p.nbatch == 0 or p.M == 0 or p.N == 0 or p.K == 0:
            return (_zeros(dx), _zeros(dy))
        sg = _row_strides(p.batch, p.M * p.N)
        if dx is not None:
            self._grad(p, True, x, y, dout, sg, dx)
        if dy is not None:
            y_single = not any(s for s in p.sy)
            if p.batch and y_single and not p.tx and all(p.x_keep):
                # Stacked rows: the batch sum folds into one contraction over batch*M rows.
                R = p.nbatch * p.M
                if not p.ty:    # [K, N] = X_rows^T [K, R] @ G_rows [R, N]
                    gemm(x, dout, dy, p.K, p.N, R, True, False, self.alpha, lda=p.xc, ldb=p.N)
                else:           # [N, K] = G_rows^T [N, R] @ X_rows [R, K]
                    gemm(dout, x, dy, p.N, p.K, R, True, False, self.alpha, lda=p.N, ldb=p.xc)
            else:
                self._grad(p, False, x, y, dout, sg, dy)
        return (dx, dy)

    def _grad(self, p, for_x, x, y, g, sg, out):
        """X@GRAD (for_x) or Y@GRAD per output batch entry, into ``out`` directly or, for an
        operand broadcast over some batch dims, into a scratch summed over them."""
        keep = p.x_keep if for_x else p.y_keep
        rows, cols = (p.xr, p.xc) if for_x else (p.yr, p.yc)
        target = out if all(keep) else device_empty((p.nbatch, rows * cols), out.dtype)
        a = dict(alpha=self.alpha, batch=p.batch)
        if for_x and not p.tx:      # [M, K] = G [M, N] @ op(Y)^T
            gemm(g, y, target, p.M, p.K, p.N, False, not p.ty, lda=p.N, ldb=p.yc,
                 a_strides=sg, b_strides=p.sy, **a)
        elif for_x:                 # [K, M] = op(Y) [K, N] @ G^T
            gemm(y, g, target, p.K, p.M, p.N, p.ty, True, lda=p.yc, ldb=p.N,
                 a_strides=p.sy, b_strides=sg, **a)
        elif not p.ty:              # [K, N] = op(X)^T [K, M] @ G [M, N]
            gemm(x, g, target, p.K, p.N, p.M, not p.tx, False, lda=p.xc, ldb=p.N,
                 a_strides=p.sx, b_strides=sg, **a)
        else:                       # [N, K] = G^T [N, M] @ op(X) [M, K]
            gemm(g, x, target, p.N, p.K, p.M, True, p.tx, lda=p.N, ldb=p.xc,
                 a_strides=sg, b_strides=p.sx, **a)
        if target is not out:
            sum_batches(target, out, p.batch, keep, rows * cols)


def _make_matmul_grad(attrs, info=None):
    return MatmulGrad("matmul_grad", attrs["transpose_X"], attrs["transpose_Y"],
                      attrs["alpha"], info)


def _make_matmul_v2_grad(attrs, info=None):
    return MatmulGrad("matmul_v2_grad", attrs["trans_x"], attrs["trans_y"], 1.0, info)


KERNELS = [("mul", Mul, DTYPES), ("matmul", _make_matmul, DTYPES),
           ("matmul_v2", _make_matmul_v2, DTYPES), ("mul_grad", MulGrad, DTYPES),
           ("matmul_grad", _make_matmul_grad, DTYPES),
           ("matmul_v2_grad", _make_matmul_v2_grad, DTYPES)]
