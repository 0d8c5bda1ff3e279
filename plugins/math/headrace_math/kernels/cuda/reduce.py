"""Reductions on CUDA: mean, reduce_sum/_mean/_max/_min/_prod, reduce_all/_any and the grad ops
of the float ones, with the CPU kernel's dims, keep_dim, reduce_all, in_dtype/out_dtype and
0-D outputs (Paddle 3).

The plan is the CPU kernel's: dims normalized, size-1 dims dropped, adjacent alike dims merged
into runs. X is never transposed: a kept run and a reduced run each have an element stride in
X, so output element ``o`` starts at the offset of its kept coordinates and reduced element
``r`` lies at the offset of its reduced coordinates from there (a general index mapping, any
number of reduced runs). The forward is one block per output element, its threads striding
over the reduced elements, the partial results combined as a shared-memory tree
(cuda_rows.block_reduce); reductions of at most SHORT elements are one thread per output
element instead. Floats accumulate in float64 (float32 included), integers and bools
in int64, as the CPU kernel; max and min propagate NaN as NumPy does.

Gradients: sum, mean, max and min one thread per X@GRAD element (its output element found from
its coordinates). reduce_prod_grad is one block per output element (a thread for at most
SHORT reduced elements): the count of zero factors and the product of the nonzero ones
reduced as trees in float64, then each element gets
Out@GRAD times the product of the others (the product over itself when it is nonzero and no
factor is zero; the nonzero product at the one zero; 0 otherwise). The CPU kernel multiplies
prefix and suffix products instead (no division): results agree to rounding of float64, except
that an infinite factor gives NaN here where the CPU kernel gives the others' product.

Nothing comes back to the host: the shapes and attrs are host metadata.
"""
import numpy as np
from numba import cuda, float64, int64

from headrace.devices.cuda import current_stream
from headrace.kernels.cuda_launch import (ROW_THREADS, TREE_NANMAX, TREE_NANMIN, TREE_PROD,
                                          TREE_SUM, device_empty, device_fill, flat, grid, launch)
from headrace.kernels.cuda_rows import block_reduce

from ..host.reduce import (ALL, ANY, FLOATS, MAX, MEAN, MIN, PROD, SUM, kernel_table,
                           normalized_dims, out_shape, reduce_attrs, runs as merged_runs)

# Reductions of at most SHORT elements run one thread per output element: a block would leave
# most of its threads idle through the tree's synchronized steps, and neighbouring threads
# read neighbouring elements when the reduced dims are not the innermost (coalesced).
SHORT = 32


@cuda.jit(device=True)
def _offset(i, sizes, strides):
    """The element offset in X of flat index ``i`` over runs of ``sizes`` and ``strides``."""
    off = 0
    for k in range(len(sizes) - 1, -1, -1):
        off += (i % sizes[k]) * strides[k]
        i //= sizes[k]
    return off


def _make_reduce(acc_type):
    """The forward kernels accumulating in ``acc_type`` (float64 or int64: a shared array's
    type is a compile-time constant): (a block per output, a thread per output)."""
    @cuda.jit(device=True)
    def partial(x, op, base, first, R, step, rsizes, rstrides):
        # The reduction of reduced elements first, first + step, ... of the output at base.
        if op == MAX or op == MIN:
            acc = acc_type(x[base])       # R >= 1 here; a repeat changes neither max nor min
        elif op == PROD or op == ALL:
            acc = acc_type(1)
        else:
            acc = acc_type(0)
        for r in range(first, R, step):
            v = acc_type(x[base + _offset(r, rsizes, rstrides)])
            if op == SUM or op == MEAN:
                acc += v
            elif op == PROD:
                acc *= v
            elif op == MAX:
                if (v > acc or v != v) and acc == acc:
                    acc = v
            elif op == MIN:
                if (v < acc or v != v) and acc == acc:
                    acc = v
            elif op == ALL:
                if v == 0:
                    acc = 0
            elif v != 0:                  # ANY
                acc = 1
        return acc

    @cuda.jit(device=True)
    def store(out, o, res, op, R, to_bool):
        if op == MEAN:
            out[o] = float64(res) / R     # R >= 1 here (the mean of nothing is filled)
        elif to_bool:
            out[o] = res != 0
        else:
            out[o] = res

    @cuda.jit
    def reduce_block(x, out, op, R, ksizes, kstrides, rsizes, rstrides, to_bool):
        o = cuda.blockIdx.x               # one block per output element
        t = cuda.threadIdx.x
        base = _offset(o, ksizes, kstrides)
        buf = cuda.shared.array(ROW_THREADS, acc_type)
        res = block_reduce(buf, partial(x, op, base, t, R, ROW_THREADS, rsizes, rstrides),
                           _tree_op(op))
        if t == 0:
            store(out, o, res, op, R, to_bool)

    @cuda.jit
    def reduce_thread(x, out, op, R, ksizes, kstrides, rsizes, rstrides, to_bool, n_out):
        o = cuda.grid(1)                  # one thread per output element (short reductions)
        if o < n_out:
            base = _offset(o, ksizes, kstrides)
            store(out, o, partial(x, op, base, 0, R, 1, rsizes, rstrides), op, R, to_bool)
    return reduce_block, reduce_thread


@cuda.jit(device=True)
def _tree_op(op):
    if op == SUM or op == MEAN:
        return TREE_SUM
    if op == PROD:
        return TREE_PROD
    if op == MAX or op == ANY:
        return TREE_NANMAX
    return TREE_NANMIN


_block_float, _thread_float = _make_reduce(float64)
_block_int, _thread_int = _make_reduce(int64)


@cuda.jit
def _cast(x, out, to_bool):
    # C conversion (float to int truncates, as NumPy's astype); to bool: x != 0.
    i = cuda.grid(1)
    if i < out.size:
        if to_bool:
            out[i] = x[i] != 0
        else:
            out[i] = x[i]


def _cast_to(a, dtype):
    """``a`` in ``dtype`` on the device (``a`` itself when it already is)."""
    dtype = np.dtype(dtype)
    if a.dtype == dtype:
        return a
    out = device_empty(a.shape, dtype)
    launch(_cast, out.size, flat(a), flat(out), dtype == np.bool_)
    return out


class Reduce:
    """One reduction op; ``dims`` None reduces everything (mean, reduce_all, dim=[])."""

    def __init__(self, code, name, attrs):
        self.code, self.name = code, name
        self.keep_dim, self.dims, self.in_dtype, self.out_dtype = reduce_attrs(attrs)
        self.cached = None

    def __call__(self, x):
        a = x
        result_dtype = a.dtype
        if self.in_dtype is not None or self.out_dtype is not None:
            # Paddle casts X to out_dtype when it is set, else to in_dtype; Out has out_dtype,
            # else X's dtype.
            work = self.out_dtype if self.out_dtype is not None else self.in_dtype
            if self.out_dtype is not None:
                result_dtype = np.dtype(self.out_dtype)
            a = _cast_to(a, work)
        self._check_dtype(a)
        res = self._reduce(a)
        return (_cast_to(res, result_dtype),)

    def _plan(self, dims):
        """(Out shape, reduced dims, runs, kept tuples, reduced tuples, R, outputs)."""
        red = normalized_dims(self.dims, len(dims), self.name)
        shape = out_shape(dims, red, self.keep_dim)
        runs = merged_runs(dims, set(red))
        kept = [r for r in runs if not r[2]] + [[1, 0, False]]
        redr = [r for r in runs if r[2]] + [[1, 0, True]]
        R = int(np.prod([r[0] for r in redr], dtype=np.int64))
        n_out = int(np.prod(shape, dtype=np.int64))
        return (shape, red, runs, (tuple(r[0] for r in kept), tuple(r[1] for r in kept)),
                (tuple(r[0] for r in redr), tuple(r[1] for r in redr)), R, n_out)

    def _planned(self, dims):
        # A kernel sees the same shape run after run: plan once per shape, the (dims, plan)
        # pair replaced whole so concurrent runs never mix two shapes' plans.
        cached = self.cached
        if cached is None or cached[0] != dims:
            cached = self.cached = (dims, self._plan(dims))
        return cached[1]

    def _reduce(self, a):
        dims = tuple(a.shape)
        shape, red, _, kept, redt, R, n_out = self._planned(dims)
        logical = self.code in (ALL, ANY)
        counted = a.dtype == np.bool_ and not logical
        # Numbers of bools are counted in int64, then stored as bool (nonzero: True).
        out = device_empty(shape, np.bool_ if logical or counted else a.dtype)
        if n_out == 0:
            return out
        if R == 0 and self.code in (MAX, MIN):
            raise ValueError(f"{self.name}: X{list(dims)} has no elements to reduce along "
                             f"dim={red}, and {self.name} has no identity")
        if R == 0 and self.code == MEAN:
            return device_fill(out, out.dtype.type(np.nan))     # the mean of nothing, as NumPy
        args = (flat(a), flat(out), self.code, R, kept[0], kept[1], redt[0], redt[1],
                logical or counted)
        is_float = a.dtype.kind == "f"
        if R <= SHORT:
            blocks, threads = grid(n_out, ROW_THREADS)
            (_thread_float if is_float else _thread_int)[blocks, threads, current_stream()](
                *args, n_out)
        else:
            (_block_float if is_float else _block_int)[n_out, ROW_THREADS, current_stream()](
                *args)
        return out

    def _check_dtype(self, a):
        t = str(a.dtype)
        if self.code in (ALL, ANY):
            if t == "bool":
                return
            raise TypeError(f"{self.name}: X has dtype {t}, expected bool")
        if t in FLOATS or (self.code != MEAN and t in ("int32", "int64", "bool")):
            return
        raise TypeError(f"{self.name}: X has dtype {t}, expected " +
                        ("float32 or float64" if self.code == MEAN else
                         "float32, float64, int32 or int64"))


# -- gradients --------------------------------------------------------------------------------

@cuda.jit
def _spread(x, out, g, dx, op, R, sizes, reduced):
    """SUM / MEAN / MAX / MIN: one thread per X@GRAD element."""
    i = cuda.grid(1)
    if i < dx.size:
        # The output element of X's element i: its kept coordinates, row-major.
        o = 0
        scale = 1
        rem = i
        for k in range(len(sizes) - 1, -1, -1):
            c = rem % sizes[k]
            rem //= sizes[k]
            if reduced[k] == 0:
                o += c * scale
                scale *= sizes[k]
        if op == MEAN:
            dx[i] = float64(g[o]) / R
        elif op == SUM:
            dx[i] = g[o]
        else:
            # Out@GRAD to every position equal to the result (a NaN result: its NaNs).
            m = out[o]
            v = x[i]
            if v == m or (v != v and m != m):
                dx[i] = g[o]
            else:
                dx[i] = 0


@cuda.jit(device=True)
def _zeros_and_product(x, base, first, R, step, rsizes, rstrides):
    """(count of zero factors, product of the nonzero ones) over reduced elements first,
    first + step, ..., in float64."""
    zeros = 0.0
    p = 1.0
    for r in range(first, R, step):
        v = float64(x[base + _offset(r, rsizes, rstrides)])
        if v == 0:
            zeros += 1.0
        else:
            p *= v
    return zeros, p


@cuda.jit(device=True)
def _prod_write(x, go, zeros, p, dx, base, first, R, step, rsizes, rstrides):
    for r in range(first, R, step):
        k = base + _offset(r, rsizes, rstrides)
        v = float64(x[k])
        if zeros == 0.0:
            dx[k] = go * (p / v)
        elif zeros == 1.0 and v == 0:
            dx[k] = go * p
        else:
            dx[k] = 0.0


@cuda.jit
def _prod_grad_block(x, g, dx, R, ksizes, kstrides, rsizes, rstrides):
    """PROD: one block per output element (see the module docstring)."""
    o = cuda.blockIdx.x
    t = cuda.threadIdx.x
    base = _offset(o, ksizes, kstrides)
    buf = cuda.shared.array(ROW_THREADS, float64)
    zeros, p = _zeros_and_product(x, base, t, R, ROW_THREADS, rsizes, rstrides)
    zeros = block_reduce(buf, zeros, TREE_SUM)
    p = block_reduce(buf, p, TREE_PROD)
    _prod_write(x, float64(g[o]), zeros, p, dx, base, t, R, ROW_THREADS, rsizes, rstrides)


@cuda.jit
def _prod_grad_thread(x, g, dx, R, ksizes, kstrides, rsizes, rstrides, n_out):
    """PROD of at most SHORT elements: one thread per output element."""
    o = cuda.grid(1)
    if o < n_out:
        base = _offset(o, ksizes, kstrides)
        zeros, p = _zeros_and_product(x, base, 0, R, 1, rsizes, rstrides)
        _prod_write(x, float64(g[o]), zeros, p, dx, base, 0, R, 1, rsizes, rstrides)


class ReduceGrad(Reduce):
    """<reduce>_grad and mean_grad: (X, Out@GRAD) -> (X@GRAD,), or (X, Out, Out@GRAD) for
    reduce_max/_min. X@GRAD has X's shape and dtype; an Out@GRAD of another float dtype (the
    forward's out_dtype) is cast to X's first."""

    def __init__(self, code, name, attrs):
        Reduce.__init__(self, code, name, attrs)
        self.reads_out = code in (MAX, MIN)

    def __call__(self, x, second, third=None):
        if self.reads_out and third is None:
            raise ValueError(f"{self.name}: takes X, Out and Out@GRAD")
        if not self.reads_out and third is not None:
            raise ValueError(f"{self.name}: takes X and Out@GRAD")
        if str(x.dtype) not in FLOATS:
            raise TypeError(f"{self.name}: X has dtype {x.dtype}, expected float32 or "
                            f"float64")
        g = self._like(third if self.reads_out else second, x, "Out@GRAD")
        o = self._like(second, x, "Out") if self.reads_out else g
        dims = tuple(x.shape)
        shape, red, runs, kept, redt, R, n_out = self._planned(dims)
        gshape = tuple(g.shape)
        # A 0-D Out's gradient may come as one element of another rank ([1] in Fluid).
        if gshape != shape and not (shape == () and g.size == 1):
            raise ValueError(f"{self.name}: Out@GRAD has shape {list(gshape)}, expected "
                             f"Out's {list(shape)} for X{list(dims)}")
        if self.reads_out and tuple(o.shape) != shape and not (shape == () and o.size == 1):
            raise ValueError(f"{self.name}: Out has shape {list(o.shape)}, expected "
                             f"{list(shape)} for X{list(dims)}")
        dx = device_empty(dims, x.dtype)
        if x.size == 0:
            return (dx,)
        stream = current_stream()
        if self.code == PROD:
            args = (flat(x), flat(g), flat(dx), R, kept[0], kept[1], redt[0], redt[1])
            if R <= SHORT:
                blocks, threads = grid(n_out, ROW_THREADS)
                _prod_grad_thread[blocks, threads, stream](*args, n_out)
            else:
                _prod_grad_block[n_out, ROW_THREADS, stream](*args)
            return (dx,)
        sizes = tuple(r[0] for r in runs) + (1,)
        reduced = tuple(int(r[2]) for r in runs) + (0,)
        launch(_spread, dx.size, flat(x), flat(o), flat(g), flat(dx), self.code, R, sizes,
               reduced)
        return (dx,)

    def _like(self, v, a, slot):
        if v.dtype == a.dtype:
            return v
        if str(v.dtype) in FLOATS:
            return _cast_to(v, a.dtype)
        raise TypeError(f"{self.name}: {slot} has dtype {v.dtype}, expected a float "
                        f"dtype like X's {a.dtype}")


KERNELS = kernel_table(Reduce, ReduceGrad)
