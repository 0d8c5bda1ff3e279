"""lstmp ("dynamic_lstmp"): outputs and gradients against Fluid's lstmp equations written out
in PyTorch (autograd for the gradients, float64); finite differences through the Executor for
Input, H0, C0, Weight, ProjWeight and Bias (peepholes or not, reverse, the initial states,
clipping); LoD edge cases (empty sequences, one sequence, two LoD levels); Paddle's
projection-activation rule; errors."""
import numpy as np
import pytest

import headrace as hr
from headrace import layers
from headrace.runtime.tensor import create_lod_tensor
from headrace.testing import program_gradients

torch = pytest.importorskip("torch")
D, P = 3, 2
LENS = [2, 0, 3, 1]


def _program(peep=True, reverse=False, state="both", lod_level=1, cell_in_loss=False,
             proj_in_loss=True, **kwargs):
    """Input fed directly (its gradient is checked); loss = sum(proj * gp) [+ sum(cell * gc)]
    with gp, gc fed: any linear loss of the outputs reaches every gradient."""
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[4 * D], dtype="float64", lod_level=lod_level,
                        stop_gradient=False)
        h0 = c0 = None
        if state == "both":
            h0 = layers.data("h0", shape=[P], dtype="float64", stop_gradient=False)
        if state in ("both", "c0"):
            c0 = layers.data("c0", shape=[D], dtype="float64", stop_gradient=False)
        proj, cell = layers.dynamic_lstmp(
            x, 4 * D, P, param_attr=[hr.ParamAttr(name="Wr"), hr.ParamAttr(name="Wp")],
            bias_attr=hr.ParamAttr(name="B"), use_peepholes=peep, is_reverse=reverse,
            dtype="float64", h_0=h0, c_0=c0, **kwargs)
        gp = layers.data("gp", shape=[P], dtype="float64", lod_level=lod_level)
        loss = layers.reduce_sum(layers.elementwise_mul(proj, gp))
        if cell_in_loss:
            gc = layers.data("gc", shape=[D], dtype="float64", lod_level=lod_level)
            cell_loss = layers.reduce_sum(layers.elementwise_mul(cell, gc))
            loss = layers.elementwise_add(loss, cell_loss) if proj_in_loss else cell_loss
        # the feeds' gradients too (append_backward gives the parameters')
        hr.gradients(loss, [v for v in (x, h0, c0) if v is not None] + main.all_parameters())
    return main, startup, proj, cell, loss


def _values(rng, peep, scale=0.5):
    return {"Wr": rng.standard_normal((P, 4 * D)) * scale,
            "Wp": rng.standard_normal((D, P)) * scale,
            "B": rng.standard_normal((1, (7 if peep else 4) * D)) * 0.3}


def _feed(rng, lens, state="both", lod=None):
    """Feeds for sequences of ``lens`` (``lod``: offsets of more levels, the last ``lens``')."""
    rows, n = sum(lens), len(lens)
    lod = lod or [list(np.cumsum([0] + lens))]
    feed = {k: hr.Tensor(rng.standard_normal((rows, cols)), lod)
            for k, cols in (("x", 4 * D), ("gp", P), ("gc", D))}
    if state == "both":
        feed["h0"] = rng.standard_normal((n, P))
    if state in ("both", "c0"):
        feed["c0"] = rng.standard_normal((n, D))
    return feed


def _only(main, feed):
    """The feeds the program has variables for."""
    return {k: v for k, v in feed.items() if main.global_block().find_var(k) is not None}


def _run(main, startup, fetch, feed, values):
    feed = _only(main, feed)
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    for n, v in values.items():
        scope.set(n, hr.Tensor(v.copy()))
    return exe.run(main, feed=feed, fetch_list=fetch, scope=scope, return_numpy=False)


def _wrt(state):
    return ["x", "Wr", "Wp", "B"] + {"both": ["h0", "c0"], "c0": ["c0"], "none": []}[state]


def _check_fd(main, startup, loss, feed, values, state):
    feed = _only(main, feed)
    analytic, numeric = program_gradients(main, startup, loss, _wrt(state), feed,
                                          values=values)
    for n in analytic:
        np.testing.assert_allclose(analytic[n], numeric[n], rtol=1e-6, atol=1e-8, err_msg=n)


@pytest.mark.parametrize("peep", [True, False])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("state", ["both", "c0", "none"])
def test_gradients_equal_finite_differences(peep, reverse, state):
    rng = np.random.default_rng(2)
    main, startup, _, _, loss = _program(peep, reverse, state)
    _check_fd(main, startup, loss, _feed(rng, LENS, state), _values(rng, peep), state)


@pytest.mark.parametrize("acts", [
    dict(proj_activation="identity"),
    dict(gate_activation="tanh", cell_activation="sigmoid", candidate_activation="identity"),
    dict(cell_activation="relu", candidate_activation="relu"),
])
def test_gradients_with_other_activations_and_the_cell_in_the_loss(acts):
    # Cell's gradient counts (Paddle's maker does not pass it; headrace's does).
    rng = np.random.default_rng(3)
    main, startup, _, _, loss = _program(cell_in_loss=True, **acts)
    _check_fd(main, startup, loss, _feed(rng, LENS), _values(rng, True), "both")


def test_the_cell_alone_in_the_loss():
    # Projection's gradient has no value then (zeros): the cells still reach every input
    # through the recurrence.
    rng = np.random.default_rng(13)
    main, startup, _, _, loss = _program(reverse=True, cell_in_loss=True, proj_in_loss=False)
    _check_fd(main, startup, loss, _feed(rng, LENS), _values(rng, True), "both")


def test_clipping_bounds_the_outputs_and_its_gradient_equals_finite_differences():
    rng = np.random.default_rng(4)
    kwargs = dict(cell_clip=0.6, proj_clip=0.3)
    main, startup, proj, cell, loss = _program(cell_in_loss=True, **kwargs)
    feed, values = _feed(rng, LENS), _values(rng, True, scale=1.5)
    feed["x"] = create_lod_tensor(np.asarray(feed["x"].data) * 3, [LENS])
    r, c = (np.asarray(v) for v in _run(main, startup, [proj, cell], feed, values))
    bound_c, bound_r = np.float32(0.6), np.float32(0.3)  # float attributes, as Paddle's
    assert np.abs(c).max() <= bound_c and np.abs(r).max() <= bound_r
    assert (np.abs(c) == bound_c).sum() >= 3 and (np.abs(r) == bound_r).sum() >= 3
    assert (np.abs(c) < bound_c).any() and (np.abs(r) < bound_r).any()
    _check_fd(main, startup, loss, feed, values, "both")


def _torch_lstmp(x, lens, h0, c0, wr, wp, b, peep=True, reverse=False, cell_clip=0.0,
                 proj_clip=0.0, act_g=torch.sigmoid, act_cand=torch.tanh, act_cell=torch.tanh,
                 act_proj=torch.tanh):
    """Fluid's lstmp, step by step in PyTorch: i = act_g(x_i + r' W_ir + w_ic c' + b_i),
    f = act_g(x_f + r' W_fr + w_fc c' + b_f), c = clip(f c' + i act_cand(x_c + r' W_cr +
    b_c)), o = act_g(x_o + r' W_or + w_oc c + b_o), h = o act_cell(c), r = clip(act_proj(h
    W_rh)); Paddle's gate layout [c, i, f, o]."""
    proj, cell, offsets = {}, {}, np.cumsum([0] + lens)
    bias = b[0, :4 * D]
    w_ic, w_fc, w_oc = (b[0, 4 * D:5 * D], b[0, 5 * D:6 * D], b[0, 6 * D:]) if peep else \
        (0, 0, 0)
    for s, n in enumerate(lens):
        r = h0[s] if h0 is not None else torch.zeros(P, dtype=torch.float64)
        c = c0[s] if c0 is not None else torch.zeros(D, dtype=torch.float64)
        for k in (range(n - 1, -1, -1) if reverse else range(n)):
            row = int(offsets[s]) + k
            zc, zi, zf, zo = (x[row] + r @ wr + bias).split(D)
            i = act_g(zi + w_ic * c)
            f = act_g(zf + w_fc * c)
            c = f * c + i * act_cand(zc)
            if cell_clip > 0:
                c = torch.clamp(c, -cell_clip, cell_clip)
            o = act_g(zo + w_oc * c)
            h = o * act_cell(c)
            r = act_proj(h @ wp)
            if proj_clip > 0:
                r = torch.clamp(r, -proj_clip, proj_clip)
            proj[row], cell[row] = r, c
    rows = sum(lens)
    return torch.stack([proj[k] for k in range(rows)]), torch.stack([cell[k] for k in
                                                                       range(rows)])


@pytest.mark.parametrize("peep, reverse, state, kwargs", [
    (True, False, "both", {}),
    (True, True, "c0", {}),
    (False, True, "both", dict(proj_activation="identity")),
    (True, False, "none", dict(cell_clip=0.5, proj_clip=0.4)),
])
def test_matches_fluids_lstmp_equations_in_torch(peep, reverse, state, kwargs):
    rng = np.random.default_rng(5)
    lens = [3, 1, 0, 4]
    main, startup, proj, cell, _ = _program(peep, reverse, state, cell_in_loss=True, **kwargs)
    feed, values = _feed(rng, lens, state), _values(rng, peep, scale=0.8)
    wrt = _wrt(state)
    got = _run(main, startup, [proj, cell] + [n + "@GRAD" for n in wrt], feed, values)
    t = {k: torch.tensor(np.asarray(getattr(v, "data", v)), requires_grad=True)
         for k, v in list(feed.items()) + list(values.items())}
    clips = {k: float(np.float32(v)) for k, v in kwargs.items() if k.endswith("clip")}
    act_proj = (lambda v: v) if kwargs.get("proj_activation") == "identity" else torch.tanh
    r, c = _torch_lstmp(t["x"], lens, t.get("h0"), t.get("c0"), t["Wr"], t["Wp"], t["B"], peep,
                        reverse, act_proj=act_proj, **clips)
    ((r * t["gp"]).sum() + (c * t["gc"]).sum()).backward()
    np.testing.assert_allclose(np.asarray(got[0]), r.detach().numpy(), rtol=1e-5, atol=1e-12)
    np.testing.assert_allclose(np.asarray(got[1]), c.detach().numpy(), rtol=1e-5, atol=1e-12)
    assert got[0].lod == got[1].lod == [list(np.cumsum([0] + lens))]
    for n, g in zip(wrt, got[2:]):
        np.testing.assert_allclose(np.asarray(g), t[n].grad.numpy(), rtol=1e-5, atol=1e-10,
                                   err_msg=n)


def test_proj_activation_other_than_identity_is_cell_activation_as_in_paddle():
    # Paddle's kernel passes cell_activation where proj_activation is meant (forward and
    # backward); programs from Paddle compute that, so headrace does.
    rng = np.random.default_rng(6)
    feed, values = _feed(rng, LENS), _values(rng, True)
    outs = []
    for act in ("relu", "sigmoid", "tanh"):
        main, startup, proj, _, _ = _program(proj_activation=act)
        outs.append(np.asarray(_run(main, startup, [proj, "Wp@GRAD"], feed, values)[0]))
    np.testing.assert_array_equal(outs[0], outs[2])
    np.testing.assert_array_equal(outs[1], outs[2])
    assert (outs[2] < 0).any()  # tanh, not relu or sigmoid


@pytest.mark.parametrize("lens", [[4], [0, 3, 0], [1, 1, 1]])
def test_lod_edge_cases_match_finite_differences(lens):
    # one sequence; empty sequences (their H0/C0 gradients are zero); one-step sequences
    rng = np.random.default_rng(7)
    main, startup, proj, _, loss = _program(reverse=True)
    feed, values = _feed(rng, lens), _values(rng, True)
    _check_fd(main, startup, loss, feed, values, "both")
    (g_h0, g_c0) = _run(main, startup, ["h0@GRAD", "c0@GRAD"], feed, values)
    for s, n in enumerate(lens):
        if n == 0:
            assert not np.asarray(g_h0)[s].any() and not np.asarray(g_c0)[s].any()


def test_only_empty_sequences():
    rng = np.random.default_rng(8)
    main, startup, proj, cell, _ = _program()
    feed, values = _feed(rng, [0, 0]), _values(rng, True)
    r, c, g_h0, g_wr = _run(main, startup, [proj, cell, "h0@GRAD", "Wr@GRAD"], feed, values)
    assert np.asarray(r).shape == (0, P) and np.asarray(c).shape == (0, D)
    assert r.lod == [[0, 0, 0]]
    assert not np.asarray(g_h0).any() and not np.asarray(g_wr).any()


def test_two_lod_levels_use_the_last():
    rng = np.random.default_rng(9)
    lod = [[0, 1, 3], [0, 2, 2, 6]]
    main, startup, proj, cell, loss = _program(lod_level=2)
    feed, values = _feed(rng, [2, 0, 4], lod=lod), _values(rng, True)
    r, c = _run(main, startup, [proj, cell], feed, values)
    assert r.lod == c.lod == lod and np.asarray(r).shape == (6, P)
    # the same numbers as the last level alone
    main1, startup1, proj1, _, _ = _program()
    flat = {k: (create_lod_tensor(np.asarray(v.data), [[2, 0, 4]]) if isinstance(v, hr.Tensor)
                else v) for k, v in feed.items()}
    (r1,) = _run(main1, startup1, [proj1], flat, values)
    np.testing.assert_array_equal(np.asarray(r), np.asarray(r1))
    _check_fd(main, startup, loss, feed, values, "both")


def _block():
    prog = hr.Program()
    g = prog.global_block()
    for name, shape in (("x", [-1, 4 * D]), ("w", [P, 4 * D]), ("pw", [D, P]), ("b", [1, 7 * D]),
                        ("h0", [-1, P]), ("c0", [-1, D])):
        g.create_var(name=name, shape=shape, dtype="float64", lod_level=1 if name == "x" else 0)
    return g


OUTS = {"Projection": "r", "Cell": "c", "BatchGate": "bg", "BatchCellPreAct": "bc",
        "BatchHidden": "bh"}


@pytest.mark.parametrize("change, message", [
    ({"Weight": "pw"}, r"lstmp.*Weight \(pw\) must be \[proj_size, 4 \* hidden\]"),
    ({"ProjWeight": "w"}, r"ProjWeight \(w\) must be \[hidden, proj_size\]"),
    ({"H0": "h0"}, r"C0 must be given with H0"),
    ({"C0": "h0"}, r"C0 \(h0\) must be \[sequences, hidden\]"),
    ({"H0": "c0", "C0": "c0"}, r"H0 \(c0\) must be \[sequences, proj_size\]"),
])
def test_bad_operands_are_clear_errors_at_build_time(change, message):
    g = _block()
    ins = dict({"Input": "x", "Weight": "w", "ProjWeight": "pw", "Bias": "b"}, **change)
    with pytest.raises(hr.HeadraceError, match=message):
        g.append_op("lstmp", ins, OUTS)


def test_bias_width_follows_use_peepholes():
    g = _block()
    with pytest.raises(hr.HeadraceError, match=r"Bias \(b\) must be \[1, 4 \* hidden\]"):
        g.append_op("lstmp", {"Input": "x", "Weight": "w", "ProjWeight": "pw", "Bias": "b"},
                    OUTS, {"use_peepholes": False})


def test_input_without_lod_is_a_clear_error_at_run_time():
    g = _block()
    g.append_op("lstmp", {"Input": "x", "Weight": "w", "ProjWeight": "pw", "Bias": "b"}, OUTS)
    feed = {"x": np.zeros((3, 4 * D)), "w": np.zeros((P, 4 * D)), "pw": np.zeros((D, P)),
            "b": np.zeros((1, 7 * D))}
    with pytest.raises(hr.HeadraceError, match="lstmp: Input must be a batch of sequences"):
        hr.Executor().run(g.program, feed=feed, fetch_list=["r"], scope=hr.Scope())


@pytest.mark.parametrize("kwargs, message", [
    (dict(size=10), "must be 4 \\* hidden"),
    (dict(proj_size=0), "'proj_size' must be >= 1"),
    (dict(param_attr=hr.ParamAttr(name="W")), "pass a list of two"),
    (dict(param_attr=[None, None, None]), "a list of two"),
    (dict(bias_attr=False), "bias_attr cannot be False"),
    (dict(cell_clip=-1.0), "'cell_clip' must be >= 0"),
])
def test_layer_argument_errors(kwargs, message):
    with hr.program_guard(hr.Program(), hr.Program()):
        x = layers.data("x", shape=[4 * D], dtype="float32", lod_level=1)
        args = dict(size=4 * D, proj_size=P)
        args.update(kwargs)
        with pytest.raises(hr.HeadraceError, match=message):
            layers.dynamic_lstmp(x, **args)


def test_layer_makes_fluids_parameters_and_attributes():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[4 * D], dtype="float32", lod_level=1)
        proj, cell = layers.dynamic_lstmp(x, 4 * D, P, use_peepholes=False)
    op = main.global_block().ops[-1]
    assert op.type == "lstmp"
    params = {p.name: list(p.shape) for p in main.global_block().all_parameters()}
    assert sorted(params.values()) == sorted([[P, 4 * D], [D, P], [1, 4 * D]])
    assert op.attr("cell_clip") == 0.0 and op.attr("proj_clip") == 0.0
    assert op.attr("proj_activation") == "tanh" and not op.attr("use_peepholes")
    assert list(proj.shape) == [-1, P] and list(cell.shape) == [-1, D]
    assert proj.lod_level == cell.lod_level == 1


@pytest.mark.parametrize("kwargs", [dict(use_peepholes=False, proj_activation="identity"),
                                    dict(cell_clip=1.5, proj_clip=0.9)])
def test_float32_kernel_matches_the_float64_reference_on_a_larger_batch(kwargs):
    # float32 takes the core's vectorized sigmoid/tanh: a few ulp per call, still close to
    # the float64 reference after 40 steps and back.
    from headrace.testing import run_op
    from headrace_nn.reference.lstmp import REFERENCES
    rng = np.random.default_rng(11)
    d, p, lens = 40, 24, [40, 17, 0, 33, 1]
    lod = [list(np.cumsum([0] + lens))]
    ins = {"Input": hr.Tensor(rng.standard_normal((sum(lens), 4 * d)).astype("float32"), lod),
           "Weight": (rng.standard_normal((p, 4 * d)) * 0.3).astype("float32"),
           "ProjWeight": (rng.standard_normal((d, p)) * 0.3).astype("float32"),
           "Bias": (rng.standard_normal((1, (4 if kwargs.get("use_peepholes") is False else 7)
                                         * d)) * 0.3).astype("float32"),
           "C0": rng.standard_normal((len(lens), d)).astype("float32"),
           "H0": rng.standard_normal((len(lens), p)).astype("float32")}
    attrs = dict(kwargs)
    want = REFERENCES["lstmp"](ins, attrs)
    got = run_op("lstmp", ins, list(want), attrs)
    for slot, w in want.items():
        np.testing.assert_allclose(got[slot][0].numpy(), np.asarray(getattr(w, "data", w)),
                                   rtol=1e-4, atol=2e-5, err_msg=slot)
    grad_ins = {k: ins[k] for k in ("Weight", "ProjWeight", "Bias", "H0", "C0")}
    grad_ins.update({k: got[k][0] for k in want})
    grad_ins["Projection@GRAD"] = hr.Tensor(
        rng.standard_normal((sum(lens), p)).astype("float32"), lod)
    want = REFERENCES["lstmp_grad"](grad_ins, attrs)
    got = run_op("lstmp_grad", grad_ins, list(want), attrs)
    for slot, w in want.items():
        w = np.asarray(getattr(w, "data", w))
        np.testing.assert_allclose(got[slot][0].numpy(), w, rtol=1e-4,
                                   atol=1e-4 * np.abs(w).max(), err_msg=slot)


def test_a_tagger_of_lstmp_layers_learns_and_its_inference_model_round_trips(tmp_path):
    # Each row's label: is the running sum of its sequence so far positive? (Needs the
    # recurrence.) Two stacked lstmp layers, the second reversed, an fc per row, Adam.
    rng = np.random.default_rng(12)
    main, startup = hr.Program(), hr.Program()
    startup.random_seed = 3
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[1], dtype="float32", lod_level=1)
        y = layers.data("y", shape=[1], dtype="int64", lod_level=1)
        h = x
        for reverse in (False, True):
            h, _ = layers.dynamic_lstmp(layers.fc(h, size=4 * 16), 4 * 16, 8,
                                        is_reverse=reverse, cell_clip=3.0, proj_clip=2.0)
        logits = layers.fc(h, size=2)
        loss = layers.mean(layers.softmax_with_cross_entropy(logits, y))
        hr.optimizer.Adam(learning_rate=0.02).minimize(loss)
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)

    def batch():
        lens = rng.integers(1, 9, size=16)
        xs = rng.standard_normal((int(lens.sum()), 1)).astype("float32")
        offsets = np.cumsum([0] + list(lens))
        ys = np.concatenate([np.cumsum(xs[a:b, 0]) > 0 for a, b in zip(offsets[:-1],
                                                                         offsets[1:])])
        lod = [list(offsets)]
        return {"x": hr.Tensor(xs, lod), "y": hr.Tensor(ys.astype("int64")[:, None], lod)}

    losses = [float(np.asarray(exe.run(main, feed=batch(), fetch_list=[loss], scope=scope)[0])
                    .reshape(-1)[0]) for _ in range(150)]
    assert np.mean(losses[-20:]) < 0.5 * np.mean(losses[:10]), losses[::15]
    # save the inference model, load it back: the same logits
    feed = batch()
    infer = main.clone(for_test=True)
    (want,) = exe.run(infer, feed=feed, fetch_list=[logits], scope=scope)
    hr.io.save_inference_model(str(tmp_path), ["x"], [logits], exe, main, scope=scope)
    scope2 = hr.Scope()
    prog, feeds, fetches = hr.io.load_inference_model(str(tmp_path), exe, scope=scope2)
    assert "lstmp" in [op.type for op in prog.global_block().ops]
    (got,) = exe.run(prog, feed={feeds[0]: feed["x"]}, fetch_list=fetches, scope=scope2)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
