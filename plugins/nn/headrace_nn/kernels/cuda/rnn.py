"""rnn and rnn_grad on CUDA: every layer, direction and step of Paddle's rnn op, as the CPU
kernel (kernels/cpu/rnn.pyx), with its attributes and operand checks from the shared host
module (kernels/host/rnn.py).

Per layer and direction the input projection of all steps is one GEMM on the shared tiled GEMM
(x W_ih^T accumulated into the Reserve block of the direction, prefilled with the biases; its
rows are [gates | extras | h] per step and sequence), then per step one GEMM h' W_hh^T over the
whole batch (into the gates; GRU's aside, for the reset gate) and one elementwise kernel, a
thread per (sequence, unit), for the cell; gate math in float64, stored in Input's dtype. The
gradient walks the steps back the same way, per step an elementwise kernel and a GEMM for dh';
the weights' gradients, the input's and the biases' are one GEMM (or column sum) per layer and
direction over all steps after the loop. SequenceLength masks rows: a finished sequence
outputs zeros and carries its state, in the forward pass and, as a pass-through of dh and dc,
in the backward; its values are checked on the device (a flag read at the end of the run).

Dropout between layers (training, dropout_prob > 0, more than one layer): the mask is drawn on
the device from numba.cuda.random xoroshiro128p states (headrace.kernels.cuda_launch), kept
where u >= dropout_prob as the CPU's NumPy draw (another generator: the same law, other bits).
A seed attribute reseeds the states at every call (the same mask every run, Paddle's rule);
else the op's stream seed makes states once that advance run after run. Host to device: the
states (or the seed) once, at the first call; nothing else crosses in a step.
"""
import numpy as np
from numba import cuda
from numba.cuda.random import xoroshiro128p_dtype, xoroshiro128p_uniform_float32

from headrace.devices.cuda import current_stream
from headrace.kernels.cuda_gemm import gemm, sum_batches
from headrace.kernels.cuda_launch import (check_flag, device_copy, device_empty, device_fill,
                                          new_flag, reseed_states, rng_count, rng_grid,
                                          rng_states)

from ..host.rnn import GATES, WIDTH, RNNAttrs, lens_error, lens_operand, stack_operands
from ._rnn import launch, operand, value, zeros
from .gru_unit import _act

DTYPES = ("float32", "float64")
LSTM, GRU, RNN_RELU = 0, 1, 2


def _device(v, dtype, shape, op, slot):
    """stack_operands' converter: the device array, its dtype and shape checked."""
    operand(v, dtype, shape, op, slot)
    return value(v)


@cuda.jit
def _bias(res, b_ih, b_hh, base, KH, GH, H, gru, total):
    """Each step's gate columns of a Reserve block start as b_ih + b_hh (GRU's candidate:
    b_ih alone, b_hc goes inside the reset product)."""
    k = cuda.grid(1)
    if k < total:
        r = k // GH
        c = k - r * GH
        v = b_ih[c]
        if not gru or c < 2 * H:
            v += b_hh[c]
        res[base + r * KH + c] = v


@cuda.jit
def _cell(mode, res, row_off, hp, hp_off, ldh, cp, cp_off, ldc, tmp, b_hh, lens, has_lens, t,
          out, o_off, ldo, N, H, K, total):
    """One step of one direction: the gates of row (t, n) in ``res`` (+ h' W_hh^T, or GRU's
    in ``tmp``) activated, the states and Out written."""
    k = cuda.grid(1)
    if k < total:
        n = k // H
        j = k - n * H
        row = row_off + n * K * H
        h_prev = float(hp[hp_off + n * ldh + j])
        o = (t * N + n) * ldo + o_off + j
        if has_lens and t >= lens[n]:
            # a finished sequence: zeros out, the state carried; the rest of its row zeros
            out[o] = 0
            for m in range(K):
                res[row + m * H + j] = 0
            res[row + (K - 1) * H + j] = h_prev
            if mode == LSTM:
                res[row + 4 * H + j] = cp[cp_off + n * ldc + j]
            return
        if mode == LSTM:
            i = _act(0, float(res[row + j]))
            f = _act(0, float(res[row + H + j]))
            g = _act(1, float(res[row + 2 * H + j]))
            og = _act(0, float(res[row + 3 * H + j]))
            c = f * cp[cp_off + n * ldc + j] + i * g
            h = og * _act(1, c)
            res[row + j] = i
            res[row + H + j] = f
            res[row + 2 * H + j] = g
            res[row + 3 * H + j] = og
            res[row + 4 * H + j] = c
        elif mode == GRU:
            tr = n * 3 * H
            r = _act(0, float(res[row + j]) + tmp[tr + j])
            z = _act(0, float(res[row + H + j]) + tmp[tr + H + j])
            hc = float(tmp[tr + 2 * H + j]) + b_hh[2 * H + j]
            cand = _act(1, float(res[row + 2 * H + j]) + r * hc)
            h = z * h_prev + (1 - z) * cand
            res[row + j] = r
            res[row + H + j] = z
            res[row + 2 * H + j] = cand
            res[row + 3 * H + j] = hc
        else:
            h = float(res[row + j])
            if mode == RNN_RELU:
                if not h > 0:
                    h = 0.0
            else:
                h = _act(1, h)
            res[row + j] = h
        res[row + (K - 1) * H + j] = h
        out[o] = h


@cuda.jit
def _cell_grad(mode, res, row_off, hp, hp_off, ldh, cp, cp_off, ldc, lens, has_lens, t, dout,
               has_dout, o_off, ldo, dh, dc, dhp, dgx, dgh, g_off, N, H, K, total):
    """One step back: the gates' pre-activation gradients of row (t, n) into ``dgx`` (input
    side) and ``dgh`` (recurrent side: the same buffer but for GRU's candidate), dc carried in
    place, dh' 's direct term into ``dhp`` (the step's GEMM adds the rest)."""
    k = cuda.grid(1)
    if k < total:
        n = k // H
        j = k - n * H
        row = row_off + n * K * H
        G = 4 if mode == LSTM else (3 if mode == GRU else 1)
        e = g_off + n * G * H
        if has_lens and t >= lens[n]:
            # nothing of this step reaches the loss: dh and dc pass through
            for m in range(G):
                dgx[e + m * H + j] = 0
                dgh[e + m * H + j] = 0
            dhp[k] = dh[k]
            return
        dht = float(dh[k])
        if has_dout:
            dht += dout[(t * N + n) * ldo + o_off + j]
        if mode == LSTM:
            i = float(res[row + j])
            f = float(res[row + H + j])
            g = float(res[row + 2 * H + j])
            o = float(res[row + 3 * H + j])
            tc = _act(1, float(res[row + 4 * H + j]))
            dcc = dc[k] + dht * o * (1 - tc * tc)
            dgx[e + j] = dcc * g * i * (1 - i)
            dgx[e + H + j] = dcc * cp[cp_off + n * ldc + j] * f * (1 - f)
            dgx[e + 2 * H + j] = dcc * i * (1 - g * g)
            dgx[e + 3 * H + j] = dht * tc * o * (1 - o)
            dc[k] = dcc * f
            dhp[k] = 0
        elif mode == GRU:
            r = float(res[row + j])
            u = float(res[row + H + j])
            cand = float(res[row + 2 * H + j])
            dn = dht * (1 - u) * (1 - cand * cand)
            dr = dn * res[row + 3 * H + j] * r * (1 - r)
            du = dht * (hp[hp_off + n * ldh + j] - cand) * u * (1 - u)
            dgx[e + j] = dr
            dgx[e + H + j] = du
            dgx[e + 2 * H + j] = dn
            dgh[e + j] = dr
            dgh[e + H + j] = du
            dgh[e + 2 * H + j] = dn * r
            dhp[k] = dht * u
        else:
            y = float(res[row + j])
            if mode == RNN_RELU:
                dgx[e + j] = dht if y > 0 else 0.0
            else:
                dgx[e + j] = dht * (1 - y * y)
            dhp[k] = 0


@cuda.jit
def _copy_rows(src, s_off, lds, dst, d_off, ldd, H, total):
    k = cuda.grid(1)
    if k < total:
        n = k // H
        j = k - n * H
        dst[d_off + n * ldd + j] = src[s_off + n * lds + j]


@cuda.jit
def _previous_out(res, l_base, lens, has_lens, out, T, N, D, H, K, total):
    """Layer l's input again: the layer before's h of every step (both directions, from
    Reserve), zeros past the lengths as its Out."""
    k = cuda.grid(1)
    if k < total:
        c = k % (D * H)
        tn = k // (D * H)
        n = tn % N
        t = tn // N
        d = c // H
        j = c - d * H
        if has_lens and t >= lens[n]:
            out[k] = 0
        else:
            out[k] = res[l_base + d * T * N * K * H + tn * K * H + (K - 1) * H + j]


@cuda.jit
def _drop(a, mask, keep, p_one, total):
    """Paddle's upscaled dropout in place: a * mask / (1 - p), zeros when p is 1."""
    k = cuda.grid(1)
    if k < total:
        a[k] = 0 if p_one else a[k] * mask[k] / keep


@cuda.jit
def _draw(states, mask, p, total):
    t = cuda.grid(1)
    if t < total:
        i = t
        while i < mask.size:
            mask[i] = 1 if xoroshiro128p_uniform_float32(states, t) >= p else 0
            i += total


@cuda.jit
def _check_lens(lens, T, flag):
    k = cuda.grid(1)
    if k < lens.size and (lens[k] < 0 or lens[k] > T):
        cuda.atomic.min(flag, 0, k)


class _Stack:
    """The attributes and operands both kernels read, and the dropout between layers."""

    def __init__(self, attrs, info=None):
        self.a = RNNAttrs(attrs, info)
        self.info = info
        self.states = self.scratch = self.seed_dev = None

    def operands(self, op, x, states, weights, lens):
        x, T, N, states, ws = stack_operands(op, self.a, x, states, weights, _device)
        if lens is not None:
            lens = lens_operand(op, value(lens), N)
            if N:
                flag = new_flag(N)
                launch(_check_lens, N, lens, T, flag)
                check_flag(flag, N, lambda pos: lens_error(op, T, f"one out of range at "
                                                               f"sequence {pos}"), self.info)
        return x, T, N, [s.reshape(-1) for s in states], ws, lens

    def dims(self):
        """(layers, directions, hidden, mode, gates, Reserve's width, gates * hidden, width *
        hidden)."""
        a = self.a
        G, K = GATES[a.mode], WIDTH[a.mode]
        return a.layers, a.dirs, a.hid, a.mode, G, K, G * a.hid, K * a.hid

    @property
    def dropping(self):
        a = self.a
        return not a.is_test and a.p > 0 and a.layers > 1

    def draw(self, shape):
        """The dropout mask of this call (see the module docstring)."""
        mask = device_empty(shape, np.uint8)
        n = mask.size
        if not n:
            return mask
        if self.a.seed is None:
            if self.states is None:
                self.states = rng_states(self.a.stream_seed, n)
            states = self.states
        else:
            if self.scratch is None:
                self.scratch = cuda.device_array(rng_count(n), dtype=xoroshiro128p_dtype,
                                                 stream=current_stream())
                self.seed_dev = cuda.to_device(np.array([self.a.seed], np.uint64),
                                               stream=current_stream())
            reseed_states(self.scratch, self.seed_dev)
            states = self.scratch
        blocks, threads, total = rng_grid(n, states)
        _draw[blocks, threads, current_stream()](states, mask.reshape(-1), np.float32(self.a.p),
                                                 total)
        return mask

    def drop(self, a, mask):
        keep = np.dtype(a.dtype).type(np.float32(1) - np.float32(self.a.p))
        launch(_drop, a.size, a.reshape(-1), mask.reshape(-1), keep, self.a.p == 1, a.size)
        return a

    def steps(self, T, d, s, k, N, H, K, states):
        """(t, h' buffer, offset, ld, c' buffer, offset, ld) of step ``s`` of direction ``d``
        of block ``k``: PreState at the first step, else Reserve's row of the step before."""
        t = T - 1 - s if d else s
        if s == 0:
            c0 = states[1] if self.a.mode == LSTM else states[0]
            return t, states[0], k * N * H, H, c0, k * N * H, H
        base = k * T * N * K * H + (t + 1 if d else t - 1) * N * K * H
        return t, None, base + (K - 1) * H, K * H, None, base + 4 * H, K * H


class RNN(_Stack):

    def __call__(self, x, pre_state, weights, lens):
        x, T, N, states, ws, lens = self.operands("rnn", x, pre_state, weights, lens)
        L, D, H, mode, G, K, GH, KH = self.dims()
        dtype = x.dtype
        shape = (T, N, D * H)
        mask = self.draw(shape) if self.dropping else None
        reserve = device_empty((L * D, T, N, KH), dtype)
        resf = reserve.reshape(-1)
        finals = [device_empty((L * D, N, H), dtype) for _ in states]
        tmp = device_empty((max(N, 1) * GH,), dtype) if mode == GRU else resf
        inp, width = x.reshape(-1), x.shape[2]
        has_lens = lens is not None
        for l in range(L):
            if l and mask is not None:
                inp = self.drop(device_copy(inp), mask)
            out = device_empty(shape, dtype)
            outf = out.reshape(-1)
            for d in range(D):
                k = l * D + d
                w_ih, w_hh, b_ih, b_hh = ws[k]
                base = k * T * N * KH
                launch(_bias, T * N * GH, resf, b_ih, b_hh, base, KH, GH, H, mode == GRU,
                       T * N * GH)
                # every step's input projection at once
                gemm(inp, w_ih.reshape(-1), resf, T * N, GH, width, trans_b=True, beta=1.0,
                     ldc=KH, c_offset=base)
                for s in range(T):
                    t, hp, hp_off, ldh, cp, cp_off, ldc = self.steps(T, d, s, k, N, H, K,
                                                                     states)
                    hp = resf if hp is None else hp
                    cp = resf if cp is None else cp
                    row_off = base + t * N * KH
                    if mode == GRU:
                        gemm(hp, w_hh.reshape(-1), tmp, N, GH, H, trans_b=True, lda=ldh,
                             a_offset=hp_off)
                    else:
                        gemm(hp, w_hh.reshape(-1), resf, N, GH, H, trans_b=True, beta=1.0,
                             lda=ldh, ldc=KH, a_offset=hp_off, c_offset=row_off)
                    launch(_cell, N * H, mode, resf, row_off, hp, hp_off, ldh, cp, cp_off, ldc,
                           tmp, b_hh, lens if has_lens else b_hh, has_lens, t, outf, d * H,
                           D * H, N, H, K, N * H)
                last = base + (T - 1 if d == 0 else 0) * N * KH
                for i, f in enumerate(finals):
                    if T:   # h (and LSTM's c) after the direction's last step
                        launch(_copy_rows, N * H, resf, last + ((K - 1) * H if i == 0 else
                                                                  4 * H), KH,
                               f.reshape(-1), k * N * H, H, H, N * H)
                    else:
                        launch(_copy_rows, N * H, states[i], k * N * H, H, f.reshape(-1),
                               k * N * H, H, H, N * H)
            inp, width = outf, D * H
        if self.info is not None:   # as many final states as State binds (Paddle: all)
            finals = finals[:self.info.n_outputs("State")]
        if mask is None:
            mask = device_fill(device_empty(shape, np.uint8), np.uint8(1))
        return inp.reshape(shape), mask, reserve, finals


class RNNGrad(_Stack):

    def _count(self, slot, full):
        """How many gradients to return for duplicable output ``slot``: none when unbound."""
        return full if self.info is None else (full if self.info.n_outputs(slot) else 0)

    def __call__(self, x, pre_state, weights, lens, out, dropout_state, reserve, dout,
                 dstate):
        op = "rnn_grad"
        x, T, N, states, ws, lens = self.operands(op, x, pre_state, weights, lens)
        L, D, H, mode, G, K, GH, KH = self.dims()
        dtype = x.dtype
        shape = (T, N, D * H)
        _device(out, dtype, shape, op, "Out")
        resf = _device(reserve, dtype, (L * D, T, N, KH), op, "Reserve").reshape(-1)
        mask = None
        if self.dropping:
            mask = value(dropout_state)
            if mask is None:
                raise ValueError(f"{op}: dropout_prob > 0 needs DropoutState (the mask)")
            if str(mask.dtype) != "uint8" or tuple(mask.shape) != shape:
                raise ValueError(f"{op}: DropoutState has shape {list(mask.shape)} "
                                 f"{mask.dtype}, expected {list(shape)} uint8")
        dnext = None if dout is None or value(dout) is None else \
            _device(dout, dtype, shape, op, "Out@GRAD").reshape(-1)
        dstate = list(dstate or ())
        dstate += [None] * (len(states) - len(dstate))
        dfinal = [None if g is None or value(g) is None else
                  _device(g, dtype, (L * D, N, H), op, f"State@GRAD[{i}]").reshape(-1)
                  for i, g in enumerate(dstate[:len(states)])]
        has_lens = lens is not None
        lens_arg = lens if has_lens else resf
        # the layers' inputs again: Input, then each layer's Out (zeros past the lengths),
        # dropped out as the forward pass did
        inputs = [x.reshape(-1)]
        for l in range(1, L):
            prev = device_empty(shape, dtype)
            launch(_previous_out, prev.size, resf, (l - 1) * D * T * N * KH, lens_arg,
                   has_lens, prev.reshape(-1), T, N, D, H, K, prev.size)
            if mask is not None:
                self.drop(prev, mask)
            inputs.append(prev.reshape(-1))
        dws = [None] * (4 * L * D)
        dpre = [device_empty((L * D, N, H), dtype) for _ in states]
        m = max(N, 1) * H
        dh, dc, dhp = (device_empty((m,), dtype) for _ in range(3))
        dgx = device_empty((max(T * N, 1) * GH,), dtype)
        dgh = device_empty((max(T * N, 1) * GH,), dtype) if mode == GRU else dgx
        dx = None
        want_x = self.info is None or self.info.wants("Input@GRAD")
        for l in range(L - 1, -1, -1):
            inp = inputs[l]
            width = x.shape[2] if l == 0 else D * H
            dinp = device_empty((T * N, width), dtype) if (l or want_x) else None
            for d in range(D):
                k = l * D + d
                w_ih, w_hh, _, _ = ws[k]
                base = k * T * N * KH
                for buf, g in ((dh, dfinal[0]), (dc, dfinal[1] if mode == LSTM else None)):
                    if g is None:
                        device_fill(buf, np.dtype(dtype).type(0))
                    else:
                        launch(_copy_rows, N * H, g, k * N * H, H, buf, 0, H, H, N * H)
                for s in range(T - 1, -1, -1):
                    t, hp, hp_off, ldh, cp, cp_off, ldc = self.steps(T, d, s, k, N, H, K,
                                                                     states)
                    hp = resf if hp is None else hp
                    cp = resf if cp is None else cp
                    launch(_cell_grad, N * H, mode, resf, base + t * N * KH, hp, hp_off, ldh,
                           cp, cp_off, ldc, lens_arg, has_lens, t,
                           resf if dnext is None else dnext, dnext is not None, d * H, D * H,
                           dh, dc, dhp, dgx, dgh, t * N * GH, N, H, K, N * H)
                    # dh' += dG_hh W_hh over the batch, one GEMM
                    gemm(dgh, w_hh.reshape(-1), dhp, N, H, GH, beta=1.0, a_offset=t * N * GH)
                    dh, dhp = dhp, dh
                launch(_copy_rows, N * H, dh, 0, H, dpre[0].reshape(-1), k * N * H, H, H,
                       N * H)
                if mode == LSTM:
                    launch(_copy_rows, N * H, dc, 0, H, dpre[1].reshape(-1), k * N * H, H, H,
                           N * H)
                # the weights' gradients: one GEMM each over all steps
                dw_ih = device_empty(w_ih.shape, dtype)
                gemm(dgx, inp, dw_ih.reshape(-1), GH, width, T * N, trans_a=True)
                dw_hh = zeros(w_hh.shape, dtype)
                if T:
                    first = T - 1 if d else 0
                    gemm(dgh, states[0], dw_hh.reshape(-1), GH, H, N, trans_a=True,
                         a_offset=first * N * GH, b_offset=k * N * H)
                    # h after every step but the direction's last, against the step after's
                    gemm(dgh, resf, dw_hh.reshape(-1), GH, H, (T - 1) * N, trans_a=True,
                         beta=1.0, ldb=KH, a_offset=(0 if d else N) * GH,
                         b_offset=base + (N if d else 0) * KH + (K - 1) * H)
                if dinp is not None:
                    gemm(dgx, w_ih.reshape(-1), dinp.reshape(-1), T * N, width, GH,
                         beta=1.0 if d else 0.0)
                dws[2 * k], dws[2 * k + 1] = dw_ih, dw_hh
                for i, src in ((2 * L * D + 2 * k, dgx), (2 * L * D + 2 * k + 1, dgh)):
                    dws[i] = sum_batches(src, device_empty((GH,), dtype), (T * N,), (False,),
                                         GH)
            if l:
                dnext = dinp.reshape(-1)
                if mask is not None:
                    self.drop(dnext, mask)
            else:
                dx = None if dinp is None else dinp.reshape(x.shape)
        return (dx, dpre[:self._count("PreState@GRAD", len(dpre))],
                dws[:self._count("WeightList@GRAD", len(dws))])


KERNELS = [("rnn", RNN, DTYPES), ("rnn_grad", RNNGrad, DTYPES)]
