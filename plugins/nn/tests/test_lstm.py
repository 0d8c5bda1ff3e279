"""lstm ("dynamic_lstm"): outputs and gradients against PyTorch (nn.LSTM, float64, the weights
mapped over) and against Fluid's peephole equations written out in PyTorch; finite
differences through the Executor; LoD edge cases (empty sequences, one sequence, two LoD
levels); errors."""
import sys

import numpy as np
import pytest

import headrace as hr
from headrace import layers
from headrace.runtime.tensor import create_lod_tensor
from headrace.testing import program_gradients

torch = pytest.importorskip("torch")
D, I = 3, 4


def _paddle_to_torch(a):
    """Paddle's gate blocks [c, i, f, o] -> PyTorch's [i, f, g(=c), o] along the last axis."""
    c, i, f, o = np.split(a, 4, axis=-1)
    return np.concatenate([i, f, c, o], axis=-1)


def _program(use_peepholes, is_reverse, with_state=True, dtype="float64", lod_level=1):
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[I], dtype=dtype, lod_level=lod_level)
        proj = layers.fc(x, size=4 * D, bias_attr=False, param_attr=hr.ParamAttr(name="Wx"))
        h0 = c0 = None
        if with_state:
            h0 = layers.data("h0", shape=[D], dtype=dtype)
            c0 = layers.data("c0", shape=[D], dtype=dtype)
        hidden, cell = layers.dynamic_lstm(proj, 4 * D, h0, c0, use_peepholes=use_peepholes,
                                           is_reverse=is_reverse,
                                           param_attr=hr.ParamAttr(name="Wh"),
                                           bias_attr=hr.ParamAttr(name="B"))
        loss = layers.mean(layers.elementwise_mul(hidden, hidden))
        hr.append_backward(loss)
    return main, startup, hidden, cell, loss


def _values(rng, peep):
    return {"Wx": rng.standard_normal((I, 4 * D)) * 0.5,
            "Wh": rng.standard_normal((D, 4 * D)) * 0.5,
            "B": rng.standard_normal((1, (7 if peep else 4) * D)) * 0.3}


def _run(main, startup, fetch, feed, values):
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    for n, v in values.items():
        scope.set(n, hr.Tensor(v.copy()))
    return exe.run(main, feed=feed, fetch_list=fetch, scope=scope, return_numpy=False)


@pytest.mark.parametrize("lens", [[3, 1, 4], [5], [2, 0, 3, 0]])
def test_matches_torch_nn_lstm_outputs_and_gradients(lens):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((sum(lens), I))
    h0, c0 = rng.standard_normal((len(lens), D)), rng.standard_normal((len(lens), D))
    values = _values(rng, False)
    main, startup, hidden, cell, loss = _program(False, False)
    feed = {"x": create_lod_tensor(x, [lens]), "h0": h0, "c0": c0}
    h, c, gwx, gwh, gb = _run(main, startup, [hidden, cell, "Wx@GRAD", "Wh@GRAD", "B@GRAD"],
                              feed, values)
    # PyTorch: one nn.LSTM over each sequence, the same weights; the bias as bias_ih.
    net = torch.nn.LSTM(I, D).double()
    with torch.no_grad():
        net.weight_ih_l0.copy_(torch.from_numpy(_paddle_to_torch(values["Wx"]).T.copy()))
        net.weight_hh_l0.copy_(torch.from_numpy(_paddle_to_torch(values["Wh"]).T.copy()))
        net.bias_ih_l0.copy_(torch.from_numpy(_paddle_to_torch(values["B"])[0].copy()))
        net.bias_hh_l0.zero_()
    outs, cells, total = [], [], 0
    offsets = np.cumsum([0] + lens)
    for s, n in enumerate(lens):
        if n == 0:
            continue
        seq = torch.from_numpy(x[offsets[s]:offsets[s + 1]]).unsqueeze(1)
        state = (torch.from_numpy(h0[s:s + 1]).unsqueeze(0),
                 torch.from_numpy(c0[s:s + 1]).unsqueeze(0))
        out, _ = net(seq, state)
        outs.append(out[:, 0])
        # nn.LSTM does not return every c: step it with the same weights.
        hh, cc = state[0][0], state[1][0]
        for t in range(n):
            gates = (seq[t] @ net.weight_ih_l0.T + net.bias_ih_l0 + hh @ net.weight_hh_l0.T)
            i, f, g, o = gates.chunk(4, 1)
            cc = torch.sigmoid(f) * cc + torch.sigmoid(i) * torch.tanh(g)
            hh = torch.sigmoid(o) * torch.tanh(cc)
            cells.append(cc)
        total = total + (out ** 2).sum()
    (total / (sum(lens) * D)).backward()
    np.testing.assert_allclose(np.asarray(h), torch.cat(outs).detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(np.asarray(c), torch.cat(cells).detach().numpy(), atol=1e-12)
    assert h.lod == [list(offsets)]
    np.testing.assert_allclose(np.asarray(gwx), _torch_to_paddle(net.weight_ih_l0.grad.numpy()
                                                                 .T), rtol=1e-5, atol=1e-10)
    np.testing.assert_allclose(np.asarray(gwh), _torch_to_paddle(net.weight_hh_l0.grad.numpy()
                                                                 .T), rtol=1e-5, atol=1e-10)
    np.testing.assert_allclose(np.asarray(gb)[0], _torch_to_paddle(net.bias_ih_l0.grad.numpy()),
                               rtol=1e-5, atol=1e-10)


def _torch_to_paddle(a):
    i, f, g, o = np.split(a, 4, axis=-1)
    return np.concatenate([g, i, f, o], axis=-1)


@pytest.mark.parametrize("peep", [True, False])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("with_state", [True, False])
def test_gradients_equal_finite_differences(peep, reverse, with_state):
    rng = np.random.default_rng(2)
    lens = [2, 0, 3, 1]
    main, startup, _, _, loss = _program(peep, reverse, with_state)
    feed = {"x": create_lod_tensor(rng.standard_normal((sum(lens), I)), [lens])}
    if with_state:
        feed.update(h0=rng.standard_normal((4, D)), c0=rng.standard_normal((4, D)))
    analytic, numeric = program_gradients(main, startup, loss, ["Wx", "Wh", "B"], feed,
                                          values=_values(rng, peep))
    for n in analytic:
        np.testing.assert_allclose(analytic[n], numeric[n], rtol=1e-6, atol=1e-8, err_msg=n)


def test_peephole_lstm_matches_fluids_equations_in_torch():
    rng = np.random.default_rng(3)
    lens = [3, 2]
    x = rng.standard_normal((5, I))
    values = _values(rng, True)
    main, startup, hidden, _, _ = _program(True, True, with_state=False)
    (h,) = _run(main, startup, [hidden], {"x": create_lod_tensor(x, [lens])}, values)
    wx, wh, b = (torch.from_numpy(values[k]) for k in ("Wx", "Wh", "B"))
    ref, offsets = {}, np.cumsum([0] + lens)
    for s, n in enumerate(lens):
        hh, cc = torch.zeros(D, dtype=torch.float64), torch.zeros(D, dtype=torch.float64)
        for k in range(n - 1, -1, -1):   # is_reverse: from the sequence's end
            z = torch.from_numpy(x[offsets[s] + k]) @ wx + hh @ wh + b[0, :4 * D]
            zc, zi, zf, zo = z.split(D)
            i = torch.sigmoid(zi + b[0, 4 * D:5 * D] * cc)
            f = torch.sigmoid(zf + b[0, 5 * D:6 * D] * cc)
            cc = f * cc + i * torch.tanh(zc)
            o = torch.sigmoid(zo + b[0, 6 * D:] * cc)
            hh = o * torch.tanh(cc)
            ref[offsets[s] + k] = hh.numpy()
    np.testing.assert_allclose(np.asarray(h), np.array([ref[r] for r in range(5)]),
                               atol=1e-12)


def test_two_lod_levels_use_the_last():
    rng = np.random.default_rng(4)
    main, startup, hidden, _, _ = _program(False, False, with_state=False, lod_level=2)
    x = hr.Tensor(rng.standard_normal((6, I)), [[0, 1, 3], [0, 2, 2, 6]])
    (h,) = _run(main, startup, [hidden], {"x": x}, _values(rng, False))
    assert h.lod == [[0, 1, 3], [0, 2, 2, 6]] and np.asarray(h).shape == (6, D)


def test_bad_shapes_are_clear_errors():
    prog = hr.Program()
    g = prog.global_block()
    g.create_var(name="x", shape=[-1, 4 * D], dtype="float64", lod_level=1)
    g.create_var(name="w", shape=[D, 4 * D], dtype="float64")
    g.create_var(name="b", shape=[1, 4 * D], dtype="float64")
    with pytest.raises(hr.HeadraceError, match=r"Bias.*must be \[1, 7 \* hidden\]"):
        g.append_op("lstm", {"Input": "x", "Weight": "w", "Bias": "b"},
                    {"Hidden": "h", "Cell": "c", "BatchGate": "bg", "BatchCellPreAct": "bc"},
                    {"use_peepholes": True})
    g.append_op("lstm", {"Input": "x", "Weight": "w", "Bias": "b"},
                {"Hidden": "h", "Cell": "c", "BatchGate": "bg", "BatchCellPreAct": "bc"},
                {"use_peepholes": False})
    feed = {"x": np.zeros((3, 4 * D)), "w": np.zeros((D, 4 * D)), "b": np.zeros((1, 4 * D))}
    with pytest.raises(hr.HeadraceError, match="lstm: Input must be a batch of sequences"):
        hr.Executor().run(prog, feed=feed, fetch_list=["h"], scope=hr.Scope())


def _torch_peephole_lstm(x, lens, h0, c0, wh, b, reverse):
    """Fluid's peephole LSTM step by step in PyTorch (gate layout [c, i, f, o]): i =
    sigmoid(x_i + h' W_ih + w_ic c' + b_i), f = sigmoid(x_f + h' W_fh + w_fc c' + b_f), c = f
    c' + i tanh(x_c + h' W_ch + b_c), o = sigmoid(x_o + h' W_oh + w_oc c + b_o), h = o
    tanh(c)."""
    hidden, cell, offsets = {}, {}, np.cumsum([0] + lens)
    w_ic, w_fc, w_oc = b[0, 4 * D:5 * D], b[0, 5 * D:6 * D], b[0, 6 * D:]
    for s, n in enumerate(lens):
        hh, cc = h0[s], c0[s]
        for k in (range(n - 1, -1, -1) if reverse else range(n)):
            row = int(offsets[s]) + k
            zc, zi, zf, zo = (x[row] + hh @ wh + b[0, :4 * D]).split(D)
            i = torch.sigmoid(zi + w_ic * cc)
            f = torch.sigmoid(zf + w_fc * cc)
            cc = f * cc + i * torch.tanh(zc)
            o = torch.sigmoid(zo + w_oc * cc)
            hh = o * torch.tanh(cc)
            hidden[row], cell[row] = hh, cc
    return (torch.stack([hidden[k] for k in range(sum(lens))]),
            torch.stack([cell[k] for k in range(sum(lens))]))


@pytest.mark.parametrize("reverse", [False, True])
def test_peephole_lstm_outputs_and_gradients_match_fluids_equations_in_torch(reverse):
    # The oracle: dynamic_lstm with peepholes against Fluid's equations in PyTorch,
    # outputs and the gradients of Input, H0, C0, Weight and Bias (peepholes included).
    rng = np.random.default_rng(10)
    lens = [3, 0, 1, 4]
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[4 * D], dtype="float64", lod_level=1, stop_gradient=False)
        h0 = layers.data("h0", shape=[D], dtype="float64", stop_gradient=False)
        c0 = layers.data("c0", shape=[D], dtype="float64", stop_gradient=False)
        hidden, cell = layers.dynamic_lstm(x, 4 * D, h0, c0, use_peepholes=True,
                                           is_reverse=reverse,
                                           param_attr=hr.ParamAttr(name="Wh"),
                                           bias_attr=hr.ParamAttr(name="B"))
        gh = layers.data("gh", shape=[D], dtype="float64", lod_level=1)
        gc = layers.data("gc", shape=[D], dtype="float64", lod_level=1)
        loss = layers.elementwise_add(layers.reduce_sum(layers.elementwise_mul(hidden, gh)),
                                      layers.reduce_sum(layers.elementwise_mul(cell, gc)))
        hr.gradients(loss, [x, h0, c0] + main.all_parameters())
    lod = [list(np.cumsum([0] + lens))]
    rows = sum(lens)
    feed = {"x": hr.Tensor(rng.standard_normal((rows, 4 * D)), lod),
            "gh": hr.Tensor(rng.standard_normal((rows, D)), lod),
            "gc": hr.Tensor(rng.standard_normal((rows, D)), lod),
            "h0": rng.standard_normal((len(lens), D)), "c0": rng.standard_normal((len(lens), D))}
    values = {"Wh": rng.standard_normal((D, 4 * D)) * 0.5,
              "B": rng.standard_normal((1, 7 * D)) * 0.5}
    wrt = ["x", "h0", "c0", "Wh", "B"]
    got = _run(main, startup, [hidden, cell] + [n + "@GRAD" for n in wrt], feed, values)
    t = {k: torch.tensor(np.asarray(getattr(v, "data", v)), requires_grad=True)
         for k, v in list(feed.items()) + list(values.items())}
    h, c = _torch_peephole_lstm(t["x"], lens, t["h0"], t["c0"], t["Wh"], t["B"], reverse)
    ((h * t["gh"]).sum() + (c * t["gc"]).sum()).backward()
    np.testing.assert_allclose(np.asarray(got[0]), h.detach().numpy(), rtol=1e-5, atol=1e-12)
    np.testing.assert_allclose(np.asarray(got[1]), c.detach().numpy(), rtol=1e-5, atol=1e-12)
    for n, g in zip(wrt, got[2:]):
        np.testing.assert_allclose(np.asarray(g), t[n].grad.numpy(), rtol=1e-5, atol=1e-10,
                                   err_msg=n)
    assert t["B"].grad[0, 4 * D:].abs().min() > 0  # the peepholes' gradients are exercised


def _check_kernels(rng, attrs, dtype, d, lens, state, grads, tol):
    """LSTM and LSTMGrad against the NumPy reference on random operands: H0/C0 given when
    ``state``; ``grads`` names the output gradients that reach the op ("hidden", "cell" or
    "both")."""
    from headrace_nn.kernels.cpu.lstm import LSTM, LSTMGrad
    from headrace_nn.reference.lstm import lstm as ref, lstm_grad as ref_grad
    rows, lod = sum(lens), [list(np.cumsum([0] + lens))]
    peep = attrs["use_peepholes"]
    ins = {"Input": hr.Tensor(rng.standard_normal((rows, 4 * d)).astype(dtype), lod),
           "H0": rng.standard_normal((len(lens), d)).astype(dtype) if state else None,
           "C0": rng.standard_normal((len(lens), d)).astype(dtype) if state else None,
           "Weight": (rng.standard_normal((d, 4 * d)) * 0.3).astype(dtype),
           "Bias": (rng.standard_normal((1, (7 if peep else 4) * d)) * 0.3).astype(dtype)}
    args = [ins[k] for k in ("Input", "H0", "C0", "Weight", "Bias")]
    got = LSTM(attrs)(*args)
    want = ref(ins, attrs)
    for g, k in zip(got, ("Hidden", "Cell", "BatchGate", "BatchCellPreAct")):
        np.testing.assert_allclose(np.asarray(getattr(g, "data", g)),
                                   np.asarray(getattr(want[k], "data", want[k])), rtol=tol,
                                   atol=tol, err_msg=f"{k} d={d}")
    dh, dc = (hr.Tensor(rng.standard_normal((rows, d)).astype(dtype), lod)
              if grads in (which, "both") else None for which in ("hidden", "cell"))
    out = LSTMGrad(attrs)(*args, *got, dh, dc)
    want = ref_grad(dict(ins, Hidden=got[0], Cell=got[1], BatchGate=got[2],
                         BatchCellPreAct=got[3], **{"Hidden@GRAD": dh, "Cell@GRAD": dc}), attrs)
    for g, k in zip(out, ("Input", "H0", "C0", "Weight", "Bias")):
        if not state and k in ("H0", "C0"):
            assert g is None
            continue
        w = want[k + "@GRAD"]
        np.testing.assert_allclose(np.asarray(getattr(g, "data", g)),
                                   np.asarray(getattr(w, "data", w)), rtol=tol * 10,
                                   atol=tol * 10, err_msg=f"{k}@GRAD d={d}")


@pytest.mark.parametrize("dtype, tol, packed", [("float32", 2e-5, True),
                                              ("float32", 2e-5, False),
                                              ("float64", 1e-10, True)])
@pytest.mark.parametrize("lens, reverse, peep", [([5, 5, 5, 5], False, False),
                                                 ([5, 5, 5, 5], True, True),
                                                 ([0, 4, 2, 0, 4], True, False),
                                                 ([0, 3, 1], False, True)])
def test_kernels_match_the_reference_on_equal_and_ragged_batches(request, dtype, tol, packed, lens,
                                                                 reverse, peep):
    # The kernels take the weight gradient as one GEMM over Input's rows less the pairs that
    # straddle two sequences: equal lengths (the fast case), leading and repeated empty
    # sequences, both directions; float32 runs on the vectorized sigmoid/tanh.
    from headrace_nn.kernels.cpu import lstm as kernels
    was = kernels.use_packed_gemm()
    kernels.use_packed_gemm(packed)   # False: the BLAS path, as without AVX-512
    request.addfinalizer(lambda: kernels.use_packed_gemm(was))
    attrs = {"use_peepholes": peep, "is_reverse": reverse, "gate_activation": "sigmoid",
             "cell_activation": "tanh", "candidate_activation": "tanh"}
    _check_kernels(np.random.default_rng(11), attrs, dtype, 8, lens, True, "both", tol)


@pytest.mark.parametrize("peep, reverse", [(False, False), (True, True)])
@pytest.mark.parametrize("grads", ["hidden", "cell", "both"])
@pytest.mark.parametrize("state", [False, True])
def test_float32_cells_match_the_reference_with_each_gradient_and_without_states(peep, reverse,
                                                                                 grads, state):
    # float32's default activations run the cells in one fused pass per step (_rnn_gemm.h),
    # specialized by peepholes, by the state before the first step (C0 or zeros) and by which
    # of Hidden@GRAD / Cell@GRAD reach the op; hidden sizes off the vector width (19, 37),
    # ragged and empty sequences, both directions.
    rng = np.random.default_rng(12)
    attrs = {"use_peepholes": peep, "is_reverse": reverse, "gate_activation": "sigmoid",
             "cell_activation": "tanh", "candidate_activation": "tanh"}
    for d, lens in ((19, [3, 0, 5, 1]), (37, [2, 2, 0])):
        _check_kernels(rng, attrs, np.float32, d, lens, state, grads, 2e-5)


@pytest.mark.parametrize("dtype, tol", [("float32", 2e-5), ("float64", 1e-10)])
@pytest.mark.parametrize("gate, cand, cell", [("sigmoid", "relu", "identity"),
                                              ("tanh", "identity", "sigmoid")])
def test_kernels_match_the_reference_with_other_activations(dtype, tol, gate, cand, cell):
    # Activations other than the defaults take the general loops (derivatives by code) in
    # either dtype, with the gradient's padded gate-gradient rows.
    attrs = {"use_peepholes": True, "is_reverse": True, "gate_activation": gate,
             "cell_activation": cell, "candidate_activation": cand}
    _check_kernels(np.random.default_rng(15), attrs, dtype, 21, [3, 0, 4, 1], True, "both", tol)


def test_kernels_hand_out_an_output_again_only_once_nothing_holds_it():
    # The kernels keep their large arrays for the next call (fresh pages cost a tenth of a
    # step) but must never overwrite one that is still held: fetched, kept, viewed.
    from headrace_nn.kernels.cpu import lstm as kernels
    from headrace_nn.kernels.cpu._rnn import ALONE
    rng = np.random.default_rng(13)
    d, lens = 16, [3, 2]
    lod = [list(np.cumsum([0] + lens))]
    attrs = {"use_peepholes": False, "is_reverse": False, "gate_activation": "sigmoid",
             "cell_activation": "tanh", "candidate_activation": "tanh"}
    fwd, bwd = kernels.LSTM(attrs), kernels.LSTMGrad(attrs)

    def args():
        return [hr.Tensor(rng.standard_normal((5, 4 * d)).astype(np.float32), lod), None, None,
                (rng.standard_normal((d, 4 * d)) * 0.3).astype(np.float32),
                (rng.standard_normal((1, 4 * d)) * 0.3).astype(np.float32)]

    a1 = args()
    out1 = fwd(*a1)
    dh = hr.Tensor(rng.standard_normal((5, d)).astype(np.float32), lod)
    grads1 = bwd(*a1, *out1, dh, None)
    kept = [np.asarray(getattr(v, "data", v)).copy() for v in (*out1, grads1[0], grads1[3])]
    view = np.asarray(out1[2])[1:]   # a view alone keeps its base
    held = [out1[0], out1[1], out1[3], grads1[0], grads1[3]]
    del out1, grads1
    a2 = args()
    out2 = fwd(*a2)
    grads2 = bwd(*a2, *out2, dh, None)
    for was, now in zip(kept, [*(np.asarray(getattr(v, "data", v)) for v in held[:2]),
                               view.base, np.asarray(held[2]), held[3].data, held[4]]):
        np.testing.assert_array_equal(now, was)
    for o in (*out2, grads2[0]):
        assert not any(np.shares_memory(np.asarray(getattr(o, "data", o)),
                                        np.asarray(getattr(h, "data", h))) for h in held)
    # Released, an output's memory serves the next call, which still computes afresh.
    first = np.asarray(out2[0].data).__array_interface__["data"][0]
    del out2, grads2, held, view
    out3 = fwd(*a1)
    np.testing.assert_array_equal(out3[0].data, kept[0])
    np.testing.assert_array_equal(bwd(*a1, *out3, dh, None)[0].data, kept[4])
    if getattr(sys, "_is_gil_enabled", lambda: True)():   # else nothing is reused
        assert ALONE is not None
        assert out3[0].data.__array_interface__["data"][0] == first


PADDLE_PEEPHOLE_LSTM = {  # Paddle 3.3.1's lstm op, is_reverse, in float64 (13 decimals)
    "Hidden": [
        [-0.0702882450433, 0.2487292452508],
        [-0.1783467578124, 0.1914491637979],
        [-0.1019788360639, 0.2332493441515],
        [-0.19445223701, -0.4045054142301],
        [0.0919378107861, -0.1222528615091],
        [0.1598937059982, 0.0458957041625],
        [0.1795420155503, 0.1520711567158],
        [0.1621276925271, 0.0881007241566],
    ],
    "Cell": [
        [-0.2059827217378, 0.694432412321],
        [-0.4085990999648, 0.4909776613292],
        [-0.1511142868364, 0.5624321127331],
        [-0.3095319147352, -1.0992024788617],
        [0.1187265402465, -0.1683667198292],
        [0.2315887292197, 0.0548731056204],
        [0.306867042797, 0.2100041269833],
        [0.3120266368985, 0.1404460987965],
    ],
    "Input": [
        [0.2249428483424, 0.0706767369012, 0.0034840957385, 0.0280803357587, -0.0316952649377,
         0.0183479154819, -0.0459652682672, 0.1015519022093],
        [0.0855244037177, -0.1549311078829, -0.0232994733767, -0.0134350715955, -0.005805846503,
         -0.0293677295602, -0.0031956150821, -0.0824848939858],
        [-0.1342729033761, -0.2352464123017, 0.045755284659, -0.0012803934523, -0.0,
         -0.0869336304696, 0.0306154972306, -0.0965470881688],
        [0.0081255406579, 0.0229185094423, -0.0042831109359, -0.0186180358548, -0.0021622741694,
         -0.0178849582458, -0.0059865085197, -0.1551355949319],
        [0.1231036242019, 0.1245611869927, -0.0141523385746, -0.0518088994786, 0.0423068923224,
         0.0057899152762, 0.0202709877073, -0.0198605734363],
        [0.0959578601766, -0.1877188069727, 0.0058502317316, 0.0338131070607, 0.0573215922206,
         -0.0661838131819, -0.0009375410917, -0.0061960698613],
        [-0.0521361772538, -0.0915180158562, -0.0819721232086, -0.0472664895578, -0.0399004693053,
         -0.0107076249779, -0.0701281146397, -0.0226285086806],
        [-0.0103083752502, 0.0224904055721, -0.0129254264304, 0.0773705196686, 0.0079201412995,
         -0.04601225241, 0.0158781400977, 0.0253408922535],
    ],
    "H0": [
        [-0.1136127138171, -0.0277996339158],
        [0.0798324289657, -0.0550242127597],
        [-0.0078861664298, -0.1068811944565],
        [-0.0568830012803, 0.0190133133217],
    ],
    "C0": [
        [-0.3826801749991, -0.1545101128375],
        [0.0410230649796, 0.0774042977196],
        [0.2191561817296, -0.06718616112],
        [-0.0061881555147, 0.1410062427531],
    ],
    "Weight": [
        [-0.2663214445558, -0.0495669531543, 0.0194803507651, 0.0021489248912, -0.0393450337897,
         -0.053810523687, 0.043289270389, -0.056203922074],
        [-0.057275558183, -0.1298464957835, 0.0055184841751, 0.0819682808602, -0.0112050748208,
         -0.0739389247678, 0.0257232853488, 0.1041799290042],
    ],
    "Bias": [
        [0.3409368212164, -0.4287675041051, -0.0815428603972, 0.006855072549, 0.0279847709271,
         -0.2329521780873, -0.0594484225649, -0.2559599346019, -0.0137263558307, -0.0081099369516,
         0.0345086007938, -0.1027509773748, -0.0063756712897, 0.1480577510687],
    ],
}


def test_peephole_lstm_matches_paddles_numbers():
    # Paddle 3.3.1 still has the lstm op: its outputs and gradients (of loss = sum(Hidden *
    # gh); Paddle's lstm_grad ignores Cell@GRAD) on these inputs, is_reverse, peepholes, H0/C0.
    # (Paddle's H0@GRAD of an empty sequence is garbage, hence no empty sequence here.)
    d, lens = 2, [3, 1, 2, 2]
    x = np.sin(np.arange(8 * 4 * d) * 0.7).reshape(8, 4 * d)
    values = {"W": np.cos(np.arange(d * 4 * d) * 1.3).reshape(d, 4 * d) * 0.5,
              "B": np.sin(np.arange(7 * d) * 2.1 + 0.4).reshape(1, 7 * d) * 0.5}
    h0 = np.cos(np.arange(4 * d) * 0.9).reshape(4, d)
    c0 = np.sin(np.arange(4 * d) * 1.7).reshape(4, d)
    gh = np.cos(np.arange(8 * d) * 0.8).reshape(8, d)
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        xs = layers.data("x", shape=[4 * d], dtype="float64", lod_level=1, stop_gradient=False)
        h0s = layers.data("h0", shape=[d], dtype="float64", stop_gradient=False)
        c0s = layers.data("c0", shape=[d], dtype="float64", stop_gradient=False)
        hidden, cell = layers.dynamic_lstm(xs, 4 * d, h0s, c0s, use_peepholes=True,
                                           is_reverse=True, param_attr=hr.ParamAttr(name="W"),
                                           bias_attr=hr.ParamAttr(name="B"))
        ghs = layers.data("gh", shape=[d], dtype="float64", lod_level=1)
        loss = layers.reduce_sum(layers.elementwise_mul(hidden, ghs))
        hr.gradients(loss, [xs, h0s, c0s] + main.all_parameters())
    lod = [list(np.cumsum([0] + lens))]
    got = _run(main, startup, [hidden, cell, "x@GRAD", "h0@GRAD", "c0@GRAD", "W@GRAD",
                               "B@GRAD"],
               {"x": hr.Tensor(x, lod), "gh": hr.Tensor(gh, lod), "h0": h0, "c0": c0}, values)
    for (slot, want), g in zip(PADDLE_PEEPHOLE_LSTM.items(), got):
        np.testing.assert_allclose(np.asarray(g), np.array(want), rtol=0, atol=1e-12,
                                   err_msg=slot)


def test_packed_gemm_agrees_with_blas_on_random_shapes(request):
    # The AVX-512 GEMM's tiles (12/8/4/2/1 rows, 32-column panels with masked edges) against
    # BLAS on batches of 1-39 sequences (empty ones too) and hidden sizes 1-69, float32.
    from headrace_nn.kernels.cpu import lstm as kernels
    was = kernels.use_packed_gemm()
    request.addfinalizer(lambda: kernels.use_packed_gemm(was))
    rng = np.random.default_rng(5)
    for _ in range(12):
        n_seq, d = int(rng.integers(1, 40)), int(rng.integers(1, 70))
        lens = rng.integers(0, 9, n_seq).tolist()
        lod, rows = [list(np.cumsum([0] + lens))], sum(lens)
        peep, state = bool(rng.integers(2)), bool(rng.integers(2))
        attrs = {"use_peepholes": peep, "is_reverse": bool(rng.integers(2)),
                 "gate_activation": "sigmoid", "cell_activation": "tanh",
                 "candidate_activation": "tanh"}
        f32 = np.float32
        args = [hr.Tensor(rng.standard_normal((rows, 4 * d)).astype(f32), lod),
                rng.standard_normal((n_seq, d)).astype(f32) if state else None,
                rng.standard_normal((n_seq, d)).astype(f32) if state else None,
                (rng.standard_normal((d, 4 * d)) * 0.3).astype(f32),
                (rng.standard_normal((1, (7 if peep else 4) * d)) * 0.3).astype(f32)]
        dh = hr.Tensor(rng.standard_normal((rows, d)).astype(f32), lod)
        results = []
        for packed in (True, False):
            kernels.use_packed_gemm(packed)
            out = kernels.LSTM(attrs)(*args)
            grads = kernels.LSTMGrad(attrs)(*args, *out, dh, None)
            results.append([np.asarray(getattr(v, "data", v)) for v in (*out, *grads)
                            if v is not None])
        for a, b in zip(*results):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4 * (np.abs(b).max() + 1))
