"""rnn (Paddle 3's op behind paddle.nn.LSTM / GRU / SimpleRNN): outputs and every gradient
(Input, PreState, each weight and bias) against torch.nn.LSTM / GRU / RNN in float64 with the
weights mapped over, 2 layers, bidirectional, with SequenceLength (against torch's
pack_padded_sequence); finite differences through the Executor; dropout between layers (the
mask in DropoutState, fixed by the seed attribute); empty sequences, one sequence, no steps;
the layers lstm and rnn_layer; errors."""
import numpy as np
import pytest

import headrace as hr
from headrace import layers
from headrace.testing import program_gradients, run_op
from headrace_nn.reference import rnn as ref

torch = pytest.importorskip("torch")
T, N, I, H = 4, 3, 3, 2


def _program(mode, num_layers, direction, with_lens, dtype="float64", time_major=True,
             dropout=0.0, seed=0, is_test=False):
    """An rnn_layer whose loss weighs Out and the final states with fed constants; x, h0
    (and c0) fed and differentiable. Parameters named w0, w1, ... in WeightList's order."""
    main, startup = hr.Program(), hr.Program()
    dirs = 2 if direction == "bidirect" else 1
    n_states = 2 if mode == "LSTM" else 1
    with hr.program_guard(main, startup):
        shape = [T, N, I] if time_major else [N, T, I]
        x = layers.data("x", shape=shape, dtype=dtype, append_batch_size=False,
                        stop_gradient=False)
        states = [layers.data(f"s{i}", shape=[num_layers * dirs, N, H], dtype=dtype,
                              append_batch_size=False, stop_gradient=False)
                  for i in range(n_states)]
        lens = layers.data("lens", shape=[N], dtype="int32", append_batch_size=False) \
            if with_lens else None
        out, finals = layers.rnn_layer(
            x, mode, H, num_layers=num_layers, direction=direction, time_major=time_major,
            sequence_length=lens, initial_states=states if n_states == 2 else states[0],
            dropout=dropout, seed=seed, is_test=is_test, name="net")
        finals = list(finals) if n_states == 2 else [finals]
        gout = layers.data("gout", shape=list(out.shape), dtype=dtype, append_batch_size=False)
        terms = [layers.reduce_sum(layers.elementwise_mul(out, gout))]
        for i, f in enumerate(finals):
            g = layers.data(f"g{i}", shape=[num_layers * dirs, N, H], dtype=dtype,
                            append_batch_size=False)
            terms.append(layers.reduce_sum(layers.elementwise_mul(f, g)))
        loss = terms[0]
        for t in terms[1:]:
            loss = layers.elementwise_add(loss, t)
        # the fed Input and initial states get gradients too
        hr.gradients(loss, [x] + states + main.all_parameters())
    (op,) = [o for o in main.global_block().ops if o.type == "rnn"]
    weights = op.inputs["WeightList"]
    return main, startup, out, finals, loss, weights


def _torch(mode, num_layers, dirs, weights):
    cls = {"LSTM": torch.nn.LSTM, "GRU": torch.nn.GRU}.get(mode, torch.nn.RNN)
    kw = {} if mode in ("LSTM", "GRU") else \
        {"nonlinearity": "relu" if mode == "RNN_RELU" else "tanh"}
    net = cls(I, H, num_layers=num_layers, bidirectional=dirs == 2, **kw).double()
    n = num_layers * dirs
    with torch.no_grad():
        for k in range(n):
            for j, kind in enumerate(("weight_ih", "weight_hh")):
                getattr(net, kind + _suffix(k, dirs)).copy_(torch.from_numpy(weights[2 * k + j]))
            for j, kind in enumerate(("bias_ih", "bias_hh")):
                getattr(net, kind + _suffix(k, dirs)).copy_(
                    torch.from_numpy(weights[2 * n + 2 * k + j]))
    return net


def _suffix(k, dirs):
    layer, d = divmod(k, dirs)
    return f"_l{layer}" + ("_reverse" if d else "")


CASES = [(mode, layers_, direction, with_lens)
         for mode in ("LSTM", "GRU", "RNN_TANH", "RNN_RELU")
         for layers_, direction in ((1, "forward"), (2, "bidirect"))
         for with_lens in (False, True)]


@pytest.mark.parametrize("mode, num_layers, direction, with_lens", CASES)
def test_matches_torch_outputs_and_every_gradient(mode, num_layers, direction, with_lens):
    rng = np.random.default_rng(hash((mode, num_layers, with_lens)) % 2**32)
    dirs = 2 if direction == "bidirect" else 1
    main, startup, out, finals, loss, wnames = _program(mode, num_layers, direction, with_lens)
    n_states = len(finals)
    weights = ref._weights(rng, mode, I, H, num_layers, dirs, "float64")
    x = rng.standard_normal((T, N, I))
    states = [rng.standard_normal((num_layers * dirs, N, H)) for _ in range(n_states)]
    lens = np.array([4, 1, 3], np.int32)
    gout = rng.standard_normal((T, N, dirs * H))
    gst = [rng.standard_normal(s.shape) for s in states]
    feed = {"x": x, "gout": gout, **{f"s{i}": s for i, s in enumerate(states)},
            **{f"g{i}": g for i, g in enumerate(gst)}}
    if with_lens:
        feed["lens"] = lens
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    for n, w in zip(wnames, weights):
        scope.set(n, hr.Tensor(w.copy()))
    fetch = [out] + finals + ["x@GRAD"] + [f"s{i}@GRAD" for i in range(n_states)] + \
        [n + "@GRAD" for n in wnames]
    got = exe.run(main, feed=feed, fetch_list=fetch, scope=scope)

    net = _torch(mode, num_layers, dirs, weights)
    xt = torch.from_numpy(x).requires_grad_()
    st = [torch.from_numpy(s).requires_grad_() for s in states]
    xin = torch.nn.utils.rnn.pack_padded_sequence(xt, torch.from_numpy(lens).long(),
                                                  enforce_sorted=False) if with_lens else xt
    o, hs = net(xin, tuple(st) if mode == "LSTM" else st[0])
    if with_lens:
        o, _ = torch.nn.utils.rnn.pad_packed_sequence(o, total_length=T)
    hs = list(hs) if mode == "LSTM" else [hs]
    total = (o * torch.from_numpy(gout)).sum() + sum((h * torch.from_numpy(g)).sum()
                                                     for h, g in zip(hs, gst))
    total.backward()
    expected = [o.detach().numpy()] + [h.detach().numpy() for h in hs] + [xt.grad.numpy()] + \
        [s.grad.numpy() for s in st]
    n = num_layers * dirs
    for k in range(n):
        for kind in ("weight_ih", "weight_hh"):
            expected.append(getattr(net, kind + _suffix(k, dirs)).grad.numpy())
    for k in range(n):
        for kind in ("bias_ih", "bias_hh"):
            expected.append(getattr(net, kind + _suffix(k, dirs)).grad.numpy())
    for name, g, e in zip(fetch, got, expected):
        np.testing.assert_allclose(np.asarray(g), e, rtol=1e-5, atol=1e-9,
                                   err_msg=getattr(name, "name", name))


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN_TANH", "RNN_RELU"])
def test_gradients_equal_finite_differences(mode):
    rng = np.random.default_rng(7)
    main, startup, out, finals, loss, wnames = _program(mode, 2, "bidirect", True)
    feed = {"x": rng.standard_normal((T, N, I)), "lens": np.array([4, 0, 2], np.int32),
            "gout": rng.standard_normal((T, N, 2 * H))}
    for i in range(len(finals)):
        feed[f"s{i}"] = rng.standard_normal((4, N, H))
        feed[f"g{i}"] = rng.standard_normal((4, N, H))
    values = dict(zip(wnames, ref._weights(rng, mode, I, H, 2, 2, "float64")))
    wrt = ["x"] + [f"s{i}" for i in range(len(finals))] + list(wnames)
    analytic, numeric = program_gradients(main, startup, loss, wrt, feed, values=values)
    for n in wrt:
        np.testing.assert_allclose(analytic[n], numeric[n], rtol=1e-6, atol=1e-7, err_msg=n)


def test_dropout_between_layers_uses_one_mask_and_its_gradient():
    rng = np.random.default_rng(8)
    main, startup, out, finals, loss, wnames = _program("LSTM", 3, "bidirect", True,
                                                        dropout=0.5, seed=11)
    (op,) = [o for o in main.global_block().ops if o.type == "rnn"]
    mask_name = op.outputs["DropoutState"][0]
    weights = ref._weights(rng, "LSTM", I, H, 3, 2, "float64")
    states = [rng.standard_normal((6, N, H)) for _ in range(2)]
    feed = {"x": rng.standard_normal((T, N, I)), "lens": np.array([4, 2, 3], np.int32),
            "gout": rng.standard_normal((T, N, 2 * H)), "s0": states[0], "s1": states[1],
            "g0": rng.standard_normal((6, N, H)), "g1": rng.standard_normal((6, N, H))}
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    for n, w in zip(wnames, weights):
        scope.set(n, hr.Tensor(w.copy()))
    o1, m1 = exe.run(main, feed=feed, fetch_list=[out, mask_name], scope=scope)
    o2, m2 = exe.run(main, feed=feed, fetch_list=[out, mask_name], scope=scope)
    # a seed attribute fixes the mask (Paddle draws it again from the seed on every run)
    np.testing.assert_array_equal(m1, m2)
    assert m1.dtype == np.uint8 and m1.shape == (T, N, 2 * H) and 0.2 < m1.mean() < 0.8
    inputs = {"Input": feed["x"], "PreState": states, "WeightList": weights,
              "SequenceLength": feed["lens"]}
    attrs = {"mode": "LSTM", "num_layers": 3, "is_bidirec": True, "hidden_size": H,
             "dropout_prob": 0.5}
    expect, _, _, _ = ref._forward(inputs, attrs, m1)
    np.testing.assert_allclose(o1, expect, atol=1e-12)
    analytic, numeric = program_gradients(main, startup, loss, ["x", "s0"] + wnames[:4], feed,
                                          values=dict(zip(wnames, weights)))
    for n in analytic:
        np.testing.assert_allclose(analytic[n], numeric[n], rtol=1e-6, atol=1e-7, err_msg=n)


def test_is_test_drops_nothing():
    rng = np.random.default_rng(9)
    inputs, attrs = ref.sample_rnn(rng, "float64")
    attrs.update(dropout_prob=0.7, is_test=True)
    got = run_op("rnn", inputs, ["Out", "State", "DropoutState"], attrs,
                 output_counts={"State": len(inputs["PreState"])})
    expect = ref.rnn(inputs, dict(attrs, dropout_prob=0.0))
    np.testing.assert_allclose(got["Out"][0].numpy(), expect["Out"], atol=1e-12)
    assert (got["DropoutState"][0].numpy() == 1).all()


@pytest.mark.parametrize("lens, steps", [([0, 0, 0], T), ([2], T), ([], T), ([0, 0], 0)])
def test_edge_cases_empty_sequences_one_sequence_no_steps(lens, steps):
    rng = np.random.default_rng(10)
    n = len(lens)
    for mode in ("LSTM", "GRU"):
        inputs = {"Input": rng.standard_normal((steps, n, I)),
                  "PreState": [rng.standard_normal((2, n, H))
                               for _ in range(2 if mode == "LSTM" else 1)],
                  "WeightList": ref._weights(rng, mode, I, H, 1, 2, "float64"),
                  "SequenceLength": np.array(lens, np.int32)}
        attrs = {"mode": mode, "is_bidirec": True, "input_size": I, "hidden_size": H}
        got = run_op("rnn", inputs, ["Out", "State"], attrs,
                     output_counts={"State": len(inputs["PreState"])})
        expect = ref.rnn(inputs, attrs)
        np.testing.assert_allclose(got["Out"][0].numpy(), expect["Out"], atol=1e-12)
        for g, e in zip(got["State"], expect["State"]):
            np.testing.assert_allclose(g.numpy(), e, atol=1e-12)
        if lens and not any(lens):   # nothing ran: zeros out, the states as given
            assert not got["Out"][0].numpy().any()
            np.testing.assert_array_equal(got["State"][0].numpy(), inputs["PreState"][0])


def test_fluid_lstm_layer_is_batch_major_and_returns_last_h_and_c():
    rng = np.random.default_rng(11)
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[N, T, I], dtype="float64", append_batch_size=False)
        h0 = layers.data("h0", shape=[4, N, H], dtype="float64", append_batch_size=False)
        c0 = layers.data("c0", shape=[4, N, H], dtype="float64", append_batch_size=False)
        out, last_h, last_c = layers.lstm(x, h0, c0, T, H, 2, is_bidirec=True, name="fl")
    (op,) = [o for o in main.global_block().ops if o.type == "rnn"]
    assert op.attrs["mode"] == "LSTM" and op.attrs["is_bidirec"] and op.attrs["num_layers"] == 2
    assert list(out.shape) == [N, T, 2 * H]
    feed = {"x": rng.standard_normal((N, T, I)), "h0": rng.standard_normal((4, N, H)),
            "c0": rng.standard_normal((4, N, H))}
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    o, h, c = exe.run(main, feed=feed, fetch_list=[out, last_h, last_c], scope=scope)
    weights = [scope.get(n).numpy() for n in op.inputs["WeightList"]]
    bound = 1 / np.sqrt(H)
    assert all(np.abs(w).max() <= bound for w in weights)   # paddle.nn's default init
    net = _torch("LSTM", 2, 2, weights)
    to, (th, tc) = net(torch.from_numpy(feed["x"]).transpose(0, 1),
                       (torch.from_numpy(feed["h0"]), torch.from_numpy(feed["c0"])))
    np.testing.assert_allclose(o, to.transpose(0, 1).detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(h, th.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(c, tc.detach().numpy(), atol=1e-12)


def test_rnn_layer_zero_initial_states_for_any_batch():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[-1, T, I], dtype="float32")
        out, h = layers.rnn_layer(x, "GRU", H, num_layers=2)
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    for batch in (1, 5):
        o, hn = exe.run(main, feed={"x": np.ones((batch, T, I), np.float32)},
                        fetch_list=[out, h], scope=scope)
        assert o.shape == (batch, T, H) and hn.shape == (2, batch, H)
        np.testing.assert_array_equal(o[:, -1], hn[1])


def _op_inputs(mode="LSTM"):
    rng = np.random.default_rng(12)
    return {"Input": rng.standard_normal((T, N, I)),
            "PreState": [np.zeros((1, N, H)) for _ in range(2 if mode == "LSTM" else 1)],
            "WeightList": ref._weights(rng, mode, I, H, 1, 1, "float64")}


ATTRS = {"mode": "LSTM", "input_size": I, "hidden_size": H}


def test_errors_name_the_op_the_slot_and_what_was_expected():
    bad = dict(_op_inputs(), PreState=[np.zeros((1, N, H))])
    with pytest.raises(hr.HeadraceError, match=r"rnn.*PreState of mode LSTM holds 2"):
        run_op("rnn", bad, ["Out", "State"], ATTRS)
    bad = _op_inputs()
    bad["WeightList"][1] = np.zeros((4 * H, H + 1))
    with pytest.raises(hr.HeadraceError, match=r"WeightList\[1\].*must be \[8, 2\]"):
        run_op("rnn", bad, ["Out", "State"], ATTRS, output_counts={"State": 2})
    bad = dict(_op_inputs(), SequenceLength=np.array([1, 5, 2], np.int32))
    with pytest.raises(hr.HeadraceError, match=r"rnn: SequenceLength values must be in "
                                               r"\[0, 4\]"):
        run_op("rnn", bad, ["Out", "State"], ATTRS, output_counts={"State": 2})
    with pytest.raises(hr.HeadraceError, match="input_size"):
        run_op("rnn", _op_inputs(), ["Out", "State"], dict(ATTRS, input_size=5),
               output_counts={"State": 2})
    with pytest.raises(hr.HeadraceError, match="mode"):
        run_op("rnn", _op_inputs(), ["Out", "State"], dict(ATTRS, mode="LSTMP"))
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[T, N, I], dtype="float32", append_batch_size=False)
        with pytest.raises(hr.HeadraceError, match="lstm: argument 'initial_states' of LSTM"):
            layers.rnn_layer(x, "LSTM", H, initial_states=x)
        with pytest.raises(hr.HeadraceError, match="direction"):
            layers.rnn_layer(x, "GRU", H, direction="backward")


@pytest.mark.parametrize("packed", [True, False])
@pytest.mark.parametrize("mode, hid", [("LSTM", 15), ("LSTM", 33), ("GRU", 15),
                                       ("RNN_TANH", 5)])
def test_kernels_match_the_reference_on_both_gemm_paths(mode, hid, packed):
    # float32 on the packed AVX-512 GEMM (where the CPU has it) and on BLAS; sizes off the
    # GEMM's tiles (13 rows, 20 or 60 gates' columns), lengths ragged, 2 layers, both ways;
    # LSTM's one-pass cells (_rnn_gemm.h) with a hidden size under and over a vector's 16
    from headrace_nn.kernels.cpu import rnn as kernels
    before = kernels.use_packed_gemm()
    kernels.use_packed_gemm(packed)
    try:
        rng = np.random.default_rng(13)
        steps, batch, isize = 6, 13, 7
        inputs = {"Input": rng.standard_normal((steps, batch, isize)).astype("float32"),
                  "PreState": [rng.standard_normal((4, batch, hid)).astype("float32")
                               for _ in range(2 if mode == "LSTM" else 1)],
                  "WeightList": ref._weights(rng, mode, isize, hid, 2, 2, "float32"),
                  "SequenceLength": rng.integers(0, steps + 1, batch).astype(np.int32)}
        attrs = {"mode": mode, "num_layers": 2, "is_bidirec": True, "input_size": isize,
                 "hidden_size": hid}
        got = run_op("rnn", inputs, ["Out", "State", "Reserve", "DropoutState"], attrs,
                     output_counts={"State": len(inputs["PreState"])})
        expect = ref.rnn(inputs, attrs)
        np.testing.assert_allclose(got["Out"][0].numpy(), expect["Out"], rtol=2e-5, atol=2e-6)
        grads = dict(inputs, Out=got["Out"][0].numpy(), Reserve=got["Reserve"][0].numpy(),
                     DropoutState=got["DropoutState"][0].numpy())
        grads["Out@GRAD"] = rng.standard_normal(expect["Out"].shape).astype("float32")
        grads["State@GRAD"] = [rng.standard_normal(s.shape).astype("float32")
                               for s in inputs["PreState"]]
        n = len(inputs["WeightList"])
        got = run_op("rnn_grad", grads, ["Input@GRAD", "PreState@GRAD", "WeightList@GRAD"],
                     attrs, output_counts={"PreState@GRAD": len(inputs["PreState"]),
                                           "WeightList@GRAD": n})
        expect = ref.rnn_grad(grads, attrs)
        for slot in ("Input@GRAD", "PreState@GRAD", "WeightList@GRAD"):
            exp = expect[slot] if isinstance(expect[slot], list) else [expect[slot]]
            for i, (g, e) in enumerate(zip(got[slot], exp)):
                np.testing.assert_allclose(g.numpy(), e, rtol=1e-4, atol=1e-5,
                                           err_msg=f"{slot}[{i}]")
    finally:
        kernels.use_packed_gemm(before)


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN_TANH"])
def test_every_output_is_the_same_on_every_run(mode):
    # Reserve's rows for steps past a sequence's length held whatever memory was there
    # (GRU's recurrent part was never written for them): the output changed run to run, and
    # NaNs in it made the gradient test fail about every other run.
    rng = np.random.default_rng(3)
    steps, batch, isize, hid = 5, 6, 4, 3
    inputs = {"Input": rng.standard_normal((steps, batch, isize)).astype("float32"),
              "PreState": [rng.standard_normal((2, batch, hid)).astype("float32")
                           for _ in range(2 if mode == "LSTM" else 1)],
              "WeightList": ref._weights(rng, mode, isize, hid, 1, 2, "float32"),
              "SequenceLength": np.array([5, 0, 2, 3, 1, 5], np.int32)}
    attrs = {"mode": mode, "num_layers": 1, "is_bidirec": True, "input_size": isize,
             "hidden_size": hid}
    runs = [run_op("rnn", inputs, ["Out", "State", "Reserve", "DropoutState"], attrs,
                   output_counts={"State": len(inputs["PreState"])}) for _ in range(6)]
    for slot in ("Out", "State", "Reserve"):
        first = [t.numpy() for t in runs[0][slot]]
        assert all(np.isfinite(a).all() for a in first), slot
        for r in runs[1:]:
            for a, b in zip(first, [t.numpy() for t in r[slot]]):
                np.testing.assert_array_equal(a, b, err_msg=slot)
