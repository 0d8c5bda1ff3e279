"""cumsum and cumsum_grad on CUDA: axis, exclusive, reverse and flatten as the CPU kernel; floats
accumulate in float64 (float32 included), integers in int64.

X is seen as [outer, n, inner] around the summed axis; each of the outer * inner rows is
scanned independently, in one of two ways:
- n <= ROW_THREADS: one thread per row, a sequential running sum. Short rows are the common
  case (a time axis, a few classes); a block per row would leave most of its threads idle for
  log(n) synchronized steps, while neighbouring threads here read neighbouring elements when
  inner > 1 (coalesced) and add in the CPU kernel's order (the same sums bit for bit).
- longer rows (flatten makes one row of all of X): one block per row, the row walked in
  chunks of ROW_THREADS elements, each chunk an inclusive Hillis-Steele scan in shared memory
  plus the carry of the chunks before it; sums agree with the CPU's to float64 rounding.
cumsum_grad is the cumsum of Out@GRAD, flattened, the other way round, in X's shape.
"""
from numba import cuda, float64, int64

from headrace.devices.cuda import current_stream
from headrace.kernels.cuda_launch import ROW_THREADS, THREADS, device_empty, flat, grid

DTYPES = ("float32", "float64", "int32", "int64")


def _make(acc_type):
    @cuda.jit
    def scan_rows(x, out, rows, n, inner, exclusive, reverse):
        row = cuda.grid(1)                # one thread per row
        if row < rows:
            base = (row // inner) * n * inner + row % inner
            acc = acc_type(0)
            for s in range(n):
                k = base + (n - 1 - s if reverse else s) * inner
                v = x[k]
                if exclusive:
                    out[k] = acc
                    acc += v
                else:
                    acc += v
                    out[k] = acc

    @cuda.jit
    def scan_block(x, out, n, inner, exclusive, reverse):
        row = cuda.blockIdx.x             # one block per row
        t = cuda.threadIdx.x
        base = (row // inner) * n * inner + row % inner
        buf = cuda.shared.array(ROW_THREADS, acc_type)
        carry = acc_type(0)
        for start in range(0, n, ROW_THREADS):
            s = start + t
            k = base + (n - 1 - s if reverse else s) * inner
            v = acc_type(0)
            if s < n:
                v = acc_type(x[k])
            buf[t] = v
            cuda.syncthreads()
            step = 1
            while step < ROW_THREADS:     # Hillis-Steele: buf[t] becomes the chunk's prefix
                w = buf[t - step] if t >= step else acc_type(0)
                cuda.syncthreads()
                buf[t] += w
                cuda.syncthreads()
                step *= 2
            if s < n:
                if exclusive:
                    out[k] = carry + (buf[t - 1] if t > 0 else acc_type(0))
                else:
                    out[k] = carry + buf[t]
            carry += buf[ROW_THREADS - 1]
            cuda.syncthreads()            # every thread has read buf before the next chunk
    return scan_rows, scan_block


_rows_float, _block_float = _make(float64)
_rows_int, _block_int = _make(int64)


def _cumsum(a, axis, exclusive, reverse, op):
    """The running sums of ``a`` (contiguous, on the device) along ``axis`` (in range)."""
    if str(a.dtype) not in DTYPES:
        raise TypeError(f"{op}: X has dtype {a.dtype}, expected one of {', '.join(DTYPES)}")
    s = tuple(a.shape)
    n = s[axis] if s else 1
    outer = inner = 1
    for d in s[:axis]:
        outer *= d
    for d in s[axis + 1:]:
        inner *= d
    out = device_empty(s, a.dtype)
    rows = outer * inner
    if rows * n == 0:
        return out
    is_float = a.dtype.kind == "f"
    stream = current_stream()
    if n <= ROW_THREADS:
        blocks, threads = grid(rows, THREADS)
        (_rows_float if is_float else _rows_int)[blocks, threads, stream](
            flat(a), flat(out), rows, n, inner, exclusive, reverse)
    else:
        (_block_float if is_float else _block_int)[rows, ROW_THREADS, stream](
            flat(a), flat(out), n, inner, exclusive, reverse)
    return out


class Cumsum:
    def __init__(self, attrs, info=None):
        self.axis, self.flatten = attrs["axis"], attrs["flatten"]
        self.exclusive, self.reverse = attrs["exclusive"], attrs["reverse"]

    def __call__(self, x):
        if self.flatten or x.ndim == 0:
            if not self.flatten and not -1 <= self.axis <= 0:
                raise IndexError(f"cumsum: axis {self.axis} is out of range for a 0-D X")
            out = _cumsum(flat(x), 0, self.exclusive, self.reverse, "cumsum")
            return (out if self.flatten else out.reshape(()),)
        if not -x.ndim <= self.axis < x.ndim:
            raise IndexError(f"cumsum: axis {self.axis} is out of range for X of rank "
                             f"{x.ndim} (valid: {-x.ndim}..{x.ndim - 1})")
        axis = self.axis + x.ndim if self.axis < 0 else self.axis
        return (_cumsum(x, axis, self.exclusive, self.reverse, "cumsum"),)


class CumsumGrad:
    """X@GRAD of a flattening cumsum: Out@GRAD summed the other way, in X's shape."""

    def __init__(self, attrs, info=None):
        self.exclusive, self.reverse = attrs["exclusive"], attrs["reverse"]

    def __call__(self, x, dout):
        shape = tuple(x.shape)
        size = 1
        for d in shape:
            size *= d
        if dout.size != size:
            raise ValueError(f"cumsum_grad: Out@GRAD has {dout.size} elements, X{list(shape)} "
                             f"{size}")
        out = _cumsum(flat(dout), 0, self.exclusive, not self.reverse, "cumsum_grad")
        return (out.reshape(shape),)


KERNELS = [("cumsum", Cumsum, DTYPES), ("cumsum_grad", CumsumGrad, ("float32", "float64"))]
