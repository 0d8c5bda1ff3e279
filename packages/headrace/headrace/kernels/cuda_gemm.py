"""The shared CUDA GEMM of every plugin (matmul family in math, conv2d in nn): a shared-memory
tiled kernel with register blocking, batched over a grid z-dimension with broadcast batch dims,
and the reduction that sums a batched result over broadcast batch dims (the gradient of a
broadcast operand).

Entry points (all arrays are C-contiguous numba device arrays, read as flat element buffers;
nothing is copied between host and device, launches go on the executor's stream)::

    gemm(a, b, c, M, N, K, trans_a=False, trans_b=False, alpha=1.0, beta=0.0,
         lda=None, ldb=None, ldc=None, batch=(), a_strides=(), b_strides=(), c_stride=None,
         a_offset=0, b_offset=0, c_offset=0)

computes, for every entry z of the output batch ``batch`` (a tuple of dims, () for one
product), C_z[M, N] = alpha * op(A_z)[M, K] @ op(B_z)[K, N] + beta * C_z, where

* A_z is stored row-major at ``a_offset + sum(idx_d * a_strides[d])`` with leading dimension
  ``lda`` ([M, K] stored, or [K, M] when ``trans_a``; default lda: K, or M when transposed);
  a stride of 0 broadcasts A over that batch dim. Likewise B ([K, N], or [N, K] transposed).
* C_z is stored row-major at ``c_offset + z * c_stride`` (default M * ldc), ldc default N.
* beta == 0 never reads C (it may be uninitialized); K == 0 gives beta * C (zeros).

``sum_batches(src, dst, batch, keep, inner)`` sums ``src`` [*batch, inner] over the batch dims
whose ``keep`` flag is False into ``dst`` [*kept dims, inner] (one thread per dst element).

Tile geometry (block tile BM x BN, depth BK, each thread a TM x TN register micro-tile) is
compile-time constant per kernel; a product with fewer than 64 rows or columns uses a 16 x 16
block tile (16 threads) instead of 64 x 64 (256 threads), which wastes fewer threads on a GPU
and keeps the simulator, which runs each thread in Python, fast. One kernel per (dtype,
trans_a, trans_b, geometry). The batch is the grid z-dimension, so at most 65535 entries.
"""
import numpy as np
from numba import cuda, float32, float64

from ..devices.cuda import current_stream
from .cuda_launch import THREADS, grid

__all__ = ["gemm", "sum_batches"]

# (BM, BN, BK, TM, TN): block tile rows/cols, k-depth of a shared tile, thread micro-tile.
LARGE = (64, 64, 8, 4, 4)
SMALL = (16, 16, 8, 4, 4)
PAD = 4


def _make_gemm(dtype, ta, tb, geometry):
    BM, BN, BK, TM, TN = geometry
    TX = BN // TN                  # threads along a block tile row
    TY = BM // TM                  # threads along a block tile column
    NT = TY * TX                   # threads of a block
    AW, BW = BM + PAD, BN + PAD    # shared tile row widths (constants: shared array shapes)

    @cuda.jit
    def k(a, b, c, M, N, K, lda, ldb, ldc, alpha, beta, bdims, sa, sb, sc, oa, ob, oc):
        # Shared tiles hold op(A)[., k] and op(B)[k, .] with k outermost, rows padded by PAD
        # so a warp storing a k-contiguous tile column hits distinct banks.
        As = cuda.shared.array((BK, AW), dtype)
        Bs = cuda.shared.array((BK, BW), dtype)
        acc = cuda.local.array((TM, TN), dtype)
        ra = cuda.local.array(TM, dtype)
        rb = cuda.local.array(TN, dtype)
        tid = cuda.threadIdx.x
        ty = tid // TX
        tx = tid - ty * TX
        row0 = cuda.blockIdx.y * BM
        col0 = cuda.blockIdx.x * BN
        # Batch entry z -> element offsets of its A and B matrices (0 strides broadcast).
        z = cuda.blockIdx.z
        rem = z
        offa = oa
        offb = ob
        for d in range(len(bdims) - 1, -1, -1):
            i = rem % bdims[d]
            rem //= bdims[d]
            offa += i * sa[d]
            offb += i * sb[d]
        offc = oc + z * sc
        for i in range(TM):
            for j in range(TN):
                acc[i, j] = 0
        for k0 in range(0, K, BK):
            # Consecutive threads load consecutive addresses of the stored matrix.
            for e in range(tid, BM * BK, NT):
                if ta:          # stored [K, M]: M contiguous
                    kk = e // BM
                    m = e - kk * BM
                else:           # stored [M, K]: K contiguous
                    m = e // BK
                    kk = e - m * BK
                gi = row0 + m
                gk = k0 + kk
                v = dtype(0)
                if gi < M and gk < K:
                    v = a[offa + gk * lda + gi] if ta else a[offa + gi * lda + gk]
                As[kk, m] = v
            for e in range(tid, BN * BK, NT):
                if tb:          # stored [N, K]: K contiguous
                    n = e // BK
                    kk = e - n * BK
                else:           # stored [K, N]: N contiguous
                    kk = e // BN
                    n = e - kk * BN
                gj = col0 + n
                gk = k0 + kk
                v = dtype(0)
                if gj < N and gk < K:
                    v = b[offb + gj * ldb + gk] if tb else b[offb + gk * ldb + gj]
                Bs[kk, n] = v
            cuda.syncthreads()
            for kk in range(BK):
                # A thread's micro-tile is rows ty + i * TY and cols tx + j * TX: a warp reads
                # consecutive shared words (no bank conflicts) and stores consecutive columns.
                for i in range(TM):
                    ra[i] = As[kk, ty + i * TY]
                for j in range(TN):
                    rb[j] = Bs[kk, tx + j * TX]
                for i in range(TM):
                    for j in range(TN):
                        acc[i, j] += ra[i] * rb[j]
            cuda.syncthreads()
        for i in range(TM):
            gi = row0 + ty + i * TY
            if gi < M:
                for j in range(TN):
                    gj = col0 + tx + j * TX
                    if gj < N:
                        p = offc + gi * ldc + gj
                        if beta == 0:
                            c[p] = alpha * acc[i, j]
                        else:
                            c[p] = alpha * acc[i, j] + beta * c[p]
    return k, NT


_KERNELS = {}


def _kernel(dtype, ta, tb, geometry):
    key = (np.dtype(dtype).name, bool(ta), bool(tb), geometry)
    if key not in _KERNELS:
        nb = float32 if key[0] == "float32" else float64
        _KERNELS[key] = _make_gemm(nb, key[1], key[2], geometry)
    return _KERNELS[key]


def _flat(a):
    return a.reshape(1) if a.ndim == 0 else a.reshape(-1)


def gemm(a, b, c, M, N, K, trans_a=False, trans_b=False, alpha=1.0, beta=0.0, lda=None,
         ldb=None, ldc=None, batch=(), a_strides=(), b_strides=(), c_stride=None, a_offset=0,
         b_offset=0, c_offset=0):
    """C_z = alpha op(A_z) op(B_z) + beta C_z for every output batch entry z (see the module
    docstring); launches one kernel on the executor's stream, nothing when the output is
    empty. ``c`` is written in place and returned."""
    if a.dtype != b.dtype or a.dtype != c.dtype or str(a.dtype) not in ("float32", "float64"):
        raise TypeError(f"gemm: A, B and C must share float32 or float64, got {a.dtype}, "
                        f"{b.dtype} and {c.dtype}")
    batch = tuple(int(d) for d in batch)
    nbatch = int(np.prod(batch)) if batch else 1
    if M == 0 or N == 0 or nbatch == 0:
        return c
    if nbatch > 65535:
        raise ValueError(f"gemm: {nbatch} batch entries exceed the grid z-dimension (65535)")
    lda = (M if trans_a else K) if lda is None else lda
    ldb = (K if trans_b else N) if ldb is None else ldb
    ldc = N if ldc is None else ldc
    c_stride = M * ldc if c_stride is None else c_stride
    # A kernel needs a non-empty tuple: a lone dim of 1 for an unbatched product.
    bdims = batch or (1,)
    sa = tuple(int(s) for s in a_strides) or (0,)
    sb = tuple(int(s) for s in b_strides) or (0,)
    if not len(sa) == len(sb) == len(bdims):
        raise ValueError(f"gemm: batch {list(batch)} needs one A and one B stride per dim, got "
                         f"{list(a_strides)} and {list(b_strides)}")
    geometry = LARGE if M >= LARGE[0] and N >= LARGE[1] else SMALL
    kernel, threads = _kernel(a.dtype, trans_a, trans_b, geometry)
    blocks = ((N + geometry[1] - 1) // geometry[1], (M + geometry[0] - 1) // geometry[0],
              nbatch)
    kernel[blocks, threads, current_stream()](
        _flat(a), _flat(b), _flat(c), M, N, K, lda, ldb, ldc, float(alpha), float(beta),
        bdims, sa, sb, c_stride, a_offset, b_offset, c_offset)
    return c


@cuda.jit
def _sum_batches(src, dst, kdims, kstrides, rdims, rstrides, inner, total):
    # One thread per dst element: consecutive threads read consecutive src elements of each
    # summed batch entry (coalesced), accumulating in float64.
    g = cuda.grid(1)
    if g < total:
        t = g // inner
        e = g - t * inner
        base = e
        for d in range(len(kdims) - 1, -1, -1):
            i = t % kdims[d]
            t //= kdims[d]
            base += i * kstrides[d]
        nred = 1
        for d in range(len(rdims)):
            nred *= rdims[d]
        s = 0.0
        for r in range(nred):
            off = base
            q = r
            for d in range(len(rdims) - 1, -1, -1):
                i = q % rdims[d]
                q //= rdims[d]
                off += i * rstrides[d]
            s += src[off]
        dst[g] = s


def sum_batches(src, dst, batch, keep, inner):
    """dst[*kept, inner] = src[*batch, inner] summed over the batch dims d with not keep[d]
    (the gradient of an operand broadcast over those dims). Both contiguous device arrays."""
    batch = tuple(int(d) for d in batch)
    strides, s = [], inner
    for d in reversed(batch):
        strides.insert(0, s)
        s *= d
    kd = tuple(d for d, k in zip(batch, keep) if k) or (1,)
    ks = tuple(st for st, k in zip(strides, keep) if k) or (0,)
    rd = tuple(d for d, k in zip(batch, keep) if not k) or (1,)
    rs = tuple(st for st, k in zip(strides, keep) if not k) or (0,)
    total = int(np.prod(kd)) * inner
    if total > 0:
        blocks, threads = grid(total, THREADS)
        _sum_batches[blocks, threads, current_stream()](_flat(src), _flat(dst), kd, ks, rd, rs,
                                                        inner, total)
    return dst
