"""lstm, gru, lstmp, rnn and their gradients on CUDAPlace (Numba's simulator without a GPU):
outputs against the NumPy references (reference/<module>.py) over the attributes the random
samples of test_cuda_ops may miss, and each gradient kernel against central finite
differences of the CUDA forward kernel along a random direction per input slot (two forward
runs per slot: the simulator runs each thread in Python, so a per-element check would take
minutes). Shapes stay tiny: batch <= 3, hidden <= 3, at most 3 steps."""
import numpy as np
import pytest

import headrace as hr
from headrace.autodiff import gradients
from headrace.runtime import Scope, Tensor
from headrace.testing import load_references, run_op
from headrace.testing.gradcheck import _build

pytestmark = pytest.mark.cuda

REFS, _ = load_references()
CUDA = hr.CUDAPlace(0)


def _data(v):
    return np.asarray(v.data if isinstance(v, Tensor) else v)


def _matches_reference(op, inputs, attrs, counts=None, tol=1e-10, extra=()):
    """Run ``op`` on CUDA; every output the reference gives must agree. Returns the
    reference's outputs, and with ``extra`` (more output slots) the CUDA run's too."""
    inputs = {s: v for s, v in inputs.items() if v is not None}
    expected = REFS[op](dict(inputs), attrs)
    got = run_op(op, inputs, list(expected) + list(extra), attrs, CUDA, output_counts=counts)
    for slot, exp in expected.items():
        for e, g in zip(exp if isinstance(exp, list) else [exp], got[slot]):
            np.testing.assert_allclose(np.asarray(g.numpy()), _data(e), rtol=tol, atol=tol,
                                       err_msg=f"{op}.{slot}")
            if isinstance(e, Tensor):
                assert [list(v) for v in g.lod] == [list(v) for v in e.lod], slot
    return (expected, got) if extra else expected


def _directional_gradients(op, inputs, attrs, wrt, outputs, eps=1e-6, seed=0):
    """The analytic gradient of sum(outputs * G) (the op's gradient kernel on CUDA) against
    central differences of the CUDA forward kernel, along one random direction per slot."""
    rng = np.random.default_rng(seed)
    prog, block, feed, checked, targets = _build(op, inputs, attrs, set(wrt), outputs, None)
    exe = hr.Executor(CUDA)
    values = exe.run(prog, feed=feed, fetch_list=targets, scope=Scope())
    g_vars, upstream = [], {}
    for t, v in zip(targets, values):
        g = block.create_var(name=f"{t.name}_g", shape=v.shape, dtype=v.dtype,
                             need_check_feed=True, stop_gradient=True)
        g_vars.append(g)
        upstream[g.name] = rng.standard_normal(v.shape)
    forward = prog.clone()
    grads = gradients(targets, [v for _, _, v in checked], target_gradients=g_vars)
    analytic = exe.run(prog, feed={**feed, **upstream}, fetch_list=grads, scope=Scope())

    def objective(fd):
        vals = exe.run(forward, feed=fd, fetch_list=[t.name for t in targets], scope=Scope())
        return sum(float(np.sum(v * upstream[g.name])) for v, g in zip(vals, g_vars))

    # one direction per slot, its tensors (a duplicable slot's) moved together
    by_slot = {}
    for (slot, _, var), got in zip(checked, analytic):
        base = feed[var.name]
        v = rng.standard_normal(np.shape(got))
        by_slot.setdefault(slot, []).append((var.name, base, v, float(np.sum(got * v))))
    for slot, moves in by_slot.items():
        fd = [{**feed, **{n: Tensor(np.asarray(b.data, np.float64) + sign * eps * v, b.lod)
                          for n, b, v, _ in moves}} for sign in (1, -1)]
        numeric = (objective(fd[0]) - objective(fd[1])) / (2 * eps)
        np.testing.assert_allclose(sum(m[3] for m in moves), numeric, rtol=1e-6, atol=1e-8,
                                   err_msg=f"{op}: the gradient of {slot} along a random "
                                           f"direction")


def _lod_input(rng, lens, cols):
    return Tensor(rng.standard_normal((sum(lens), cols)), [list(np.cumsum([0] + lens))])


@pytest.mark.parametrize("lens, reverse", [((2, 0, 3), False), ((1, 3), True), ((0, 0), False)])
def test_the_device_layout_is_the_cpu_kernels(lens, reverse):
    from headrace_nn.kernels.cpu._rnn import layout
    from headrace_nn.kernels.cuda._rnn import Layouts
    lod = [list(np.cumsum([0, *lens]))]
    order, alive, first, idx = layout(lod, sum(lens), reverse)
    st = Layouts().get(lod, sum(lens), reverse, "lstm")
    assert (st.alive, st.first, st.total, st.n_seq) == (list(alive), list(first), sum(lens),
                                                        len(lens))
    np.testing.assert_array_equal(st.idx.copy_to_host()[:st.total], idx)
    np.testing.assert_array_equal(st.order.copy_to_host(), order)
    # the step-major row of the step before, or -1 - rank at a sequence's first step
    prev = [first[t - 1] + r if t else -1 - r for t in range(len(alive))
            for r in range(alive[t])]
    np.testing.assert_array_equal(st.prev.copy_to_host()[:st.total], prev)


# --- lstm ---------------------------------------------------------------------------------

LSTM_CASES = [
    dict(use_peepholes=True, is_reverse=True, gate_activation="sigmoid",
         cell_activation="tanh", candidate_activation="tanh"),
    dict(use_peepholes=False, is_reverse=False, gate_activation="tanh",
         cell_activation="relu", candidate_activation="identity"),
]


def _lstm_inputs(rng, attrs, state, lens=(2, 0, 3), d=2):
    ins = {"Input": _lod_input(rng, list(lens), 4 * d),
           "Weight": rng.standard_normal((d, 4 * d)) * 0.5,
           "Bias": rng.standard_normal((1, (7 if attrs["use_peepholes"] else 4) * d)) * 0.3}
    if state:
        ins["H0"] = rng.standard_normal((len(lens), d))
        ins["C0"] = rng.standard_normal((len(lens), d))
    return ins


@pytest.mark.parametrize("attrs", LSTM_CASES)
@pytest.mark.parametrize("state", [True, False])
def test_lstm_and_grad_match_the_reference(attrs, state):
    rng = np.random.default_rng(1)
    ins = _lstm_inputs(rng, attrs, state)
    fwd = _matches_reference("lstm", ins, attrs)
    kept = {k: fwd[k] for k in ("Hidden", "Cell", "BatchGate", "BatchCellPreAct")}
    # Cell@GRAD absent (no value: zeros), as when only Hidden reaches the loss
    grad_ins = {**ins, **kept, "Hidden@GRAD": rng.standard_normal((5, 2))}
    _matches_reference("lstm_grad", grad_ins, attrs)


def test_lstm_float32_and_only_empty_sequences():
    rng = np.random.default_rng(2)
    attrs = LSTM_CASES[0]
    ins = _lstm_inputs(rng, attrs, True)
    ins32 = {k: Tensor(v.data.astype("float32"), v.lod) if isinstance(v, Tensor) else
             v.astype("float32") for k, v in ins.items()}
    _matches_reference("lstm", ins32, attrs, tol=1e-5)
    empty = _lstm_inputs(rng, attrs, True, lens=(0, 0))
    fwd = _matches_reference("lstm", empty, attrs)
    _matches_reference("lstm_grad", {**empty, **fwd, "Hidden@GRAD": np.zeros((0, 2)),
                                     "Cell@GRAD": np.zeros((0, 2))}, attrs)


def test_lstm_gradients_equal_finite_differences():
    rng = np.random.default_rng(3)
    attrs = LSTM_CASES[0]
    _directional_gradients("lstm", _lstm_inputs(rng, attrs, True), attrs,
                           ["Input", "Weight", "Bias", "H0", "C0"], ["Hidden", "Cell"])


# --- gru ----------------------------------------------------------------------------------

GRU_CASES = [dict(is_reverse=True, origin_mode=False, gate_activation="sigmoid",
                  activation="tanh"),
             dict(is_reverse=False, origin_mode=True, gate_activation="tanh",
                  activation="relu")]


def _gru_inputs(rng, bias, h0, lens=(2, 0, 3), d=2):
    ins = {"Input": _lod_input(rng, list(lens), 3 * d),
           "Weight": rng.standard_normal((d, 3 * d)) * 0.5}
    if bias:
        ins["Bias"] = rng.standard_normal((1, 3 * d)) * 0.3
    if h0:
        ins["H0"] = rng.standard_normal((len(lens), d))
    return ins


@pytest.mark.parametrize("attrs", GRU_CASES)
@pytest.mark.parametrize("bias, h0", [(True, True), (False, False)])
def test_gru_and_grad_match_the_reference(attrs, bias, h0):
    rng = np.random.default_rng(4)
    ins = _gru_inputs(rng, bias, h0)
    fwd = _matches_reference("gru", ins, attrs)
    _matches_reference("gru_grad", {**ins, **fwd, "Hidden@GRAD": rng.standard_normal((5, 2))},
                       attrs)


def test_gru_float32_and_only_empty_sequences():
    rng = np.random.default_rng(5)
    attrs = GRU_CASES[0]
    ins = {k: Tensor(v.data.astype("float32"), v.lod) if isinstance(v, Tensor) else
           v.astype("float32") for k, v in _gru_inputs(rng, True, True).items()}
    _matches_reference("gru", ins, attrs, tol=1e-5)
    empty = _gru_inputs(rng, True, True, lens=(0, 0))
    fwd = _matches_reference("gru", empty, attrs)
    _matches_reference("gru_grad", {**empty, **fwd, "Hidden@GRAD": np.zeros((0, 2))}, attrs)


def test_gru_gradients_equal_finite_differences():
    rng = np.random.default_rng(6)
    _directional_gradients("gru", _gru_inputs(rng, True, True), GRU_CASES[0],
                           ["Input", "Weight", "Bias", "H0"], ["Hidden"])


# --- lstmp --------------------------------------------------------------------------------

LSTMP_CASES = [
    dict(use_peepholes=True, is_reverse=True, cell_clip=0.0, proj_clip=0.0,
         gate_activation="sigmoid", cell_activation="tanh", candidate_activation="tanh",
         proj_activation="tanh"),
    # clipping on (values beyond the bounds pass no gradient), other activations
    dict(use_peepholes=False, is_reverse=False, cell_clip=0.6, proj_clip=0.4,
         gate_activation="tanh", cell_activation="relu", candidate_activation="identity",
         proj_activation="identity"),
]


def _lstmp_inputs(rng, attrs, state, lens=(2, 0, 3), d=3, p=2):
    ins = {"Input": _lod_input(rng, list(lens), 4 * d),
           "Weight": rng.standard_normal((p, 4 * d)) * 0.5,
           "ProjWeight": rng.standard_normal((d, p)) * 0.5,
           "Bias": rng.standard_normal((1, (7 if attrs["use_peepholes"] else 4) * d)) * 0.3}
    if state in ("c0", "both"):
        ins["C0"] = rng.standard_normal((len(lens), d))
    if state == "both":
        ins["H0"] = rng.standard_normal((len(lens), p))
    return ins


def _lstmp_grad_inputs(rng, ins, fwd, cell_grad):
    grad = {k: ins[k] for k in ("Weight", "ProjWeight", "Bias", "H0", "C0") if k in ins}
    grad.update(fwd)
    grad["Projection@GRAD"] = rng.standard_normal(fwd["Projection"].data.shape)
    if cell_grad:
        grad["Cell@GRAD"] = rng.standard_normal(fwd["Cell"].data.shape)
    return grad


@pytest.mark.parametrize("attrs", LSTMP_CASES)
@pytest.mark.parametrize("state", ["both", "c0", "none"])
def test_lstmp_and_grad_match_the_reference(attrs, state):
    rng = np.random.default_rng(7)
    ins = _lstmp_inputs(rng, attrs, state)
    fwd = _matches_reference("lstmp", ins, attrs)
    _matches_reference("lstmp_grad", _lstmp_grad_inputs(rng, ins, fwd, state != "c0"), attrs)


def test_lstmp_float32_and_only_empty_sequences():
    rng = np.random.default_rng(8)
    attrs = LSTMP_CASES[0]
    ins = {k: Tensor(v.data.astype("float32"), v.lod) if isinstance(v, Tensor) else
           v.astype("float32") for k, v in _lstmp_inputs(rng, attrs, "both").items()}
    _matches_reference("lstmp", ins, attrs, tol=1e-5)
    empty = _lstmp_inputs(rng, attrs, "both", lens=(0, 0))
    fwd = _matches_reference("lstmp", empty, attrs)
    _matches_reference("lstmp_grad", _lstmp_grad_inputs(rng, empty, fwd, True), attrs)


def test_lstmp_gradients_equal_finite_differences():
    rng = np.random.default_rng(9)
    attrs = LSTMP_CASES[0]
    _directional_gradients("lstmp", _lstmp_inputs(rng, attrs, "both"), attrs,
                           ["Input", "Weight", "ProjWeight", "H0", "C0"],
                           ["Projection", "Cell"])


# --- rnn ----------------------------------------------------------------------------------

def _rnn_inputs(rng, mode, layers, dirs, lens=(3, 0, 2), steps=3, isize=2, hid=2):
    from headrace_nn.reference.rnn import _weights
    n = 3 if lens is None else len(lens)
    ins = {"Input": rng.standard_normal((steps, n, isize)),
           "PreState": [rng.standard_normal((layers * dirs, n, hid))
                        for _ in range(2 if mode == "LSTM" else 1)],
           "WeightList": _weights(rng, mode, isize, hid, layers, dirs, "float64")}
    if lens is not None:
        ins["SequenceLength"] = np.array(lens, np.int32)
    attrs = {"mode": mode, "num_layers": layers, "is_bidirec": dirs == 2, "input_size": isize,
             "hidden_size": hid}
    return ins, attrs


def _rnn_grad_inputs(rng, ins, attrs, fwd):
    shape = fwd["Out"].shape
    return {**ins, "Out": fwd["Out"], "Reserve": fwd["Reserve"],
            "DropoutState": np.ones(shape, np.uint8),
            "Out@GRAD": rng.standard_normal(shape),
            "State@GRAD": [rng.standard_normal(s.shape) for s in ins["PreState"]]}


@pytest.mark.parametrize("mode, layers, dirs, lens", [("LSTM", 1, 2, (3, 0, 2)),
                                                      ("GRU", 2, 2, (1, 3, 2)),
                                                      ("RNN_TANH", 2, 1, None),
                                                      ("RNN_RELU", 1, 1, (2, 3, 0))])
def test_rnn_and_grad_match_the_reference(mode, layers, dirs, lens):
    rng = np.random.default_rng(10)
    ins, attrs = _rnn_inputs(rng, mode, layers, dirs, lens)
    n = len(ins["PreState"])
    # Reserve from the CUDA run (its layout is the kernel's), the gradient vs the reference
    fwd, got = _matches_reference("rnn", ins, attrs, counts={"State": n}, extra=["Reserve"])
    fwd = {"Out": fwd["Out"], "Reserve": got["Reserve"][0].numpy()}
    _matches_reference("rnn_grad", _rnn_grad_inputs(rng, ins, attrs, fwd), attrs,
                       counts={"PreState@GRAD": n, "WeightList@GRAD": len(ins["WeightList"])})


def test_rnn_dropout_draws_one_mask_per_seed_and_its_gradient_uses_it():
    rng = np.random.default_rng(11)
    ins, attrs = _rnn_inputs(rng, "GRU", 2, 1, lens=(3, 2, 3))
    attrs.update(dropout_prob=0.5, seed=5)
    outs = ["Out", "DropoutState", "Reserve"]
    runs = [run_op("rnn", ins, outs, attrs, CUDA, output_counts={"State": 1})
            for _ in range(2)]
    (o1, m1, r1), (o2, m2, _) = ([r[s][0].numpy() for s in outs] for r in runs)
    np.testing.assert_array_equal(m1, m2)   # a seed attribute: the same mask every run
    assert m1.dtype == np.uint8 and set(np.unique(m1)) <= {0, 1} and 0.2 < m1.mean() < 0.8
    from headrace_nn.reference.rnn import _forward
    expect = _forward(ins, attrs, m1)[0]
    np.testing.assert_allclose(o1, expect, atol=1e-12)
    np.testing.assert_allclose(o2, expect, atol=1e-12)
    grad = {**_rnn_grad_inputs(rng, ins, attrs, {"Out": o1, "Reserve": r1}), "DropoutState": m1}
    _matches_reference("rnn_grad", grad, attrs,
                       counts={"PreState@GRAD": 1, "WeightList@GRAD": len(ins["WeightList"])})


def test_rnn_is_test_and_bad_lengths():
    rng = np.random.default_rng(12)
    ins, attrs = _rnn_inputs(rng, "LSTM", 2, 1)
    attrs.update(dropout_prob=0.7, is_test=True)
    got = run_op("rnn", ins, ["Out", "DropoutState"], attrs, CUDA, output_counts={"State": 2})
    np.testing.assert_allclose(got["Out"][0].numpy(),
                               REFS["rnn"](ins, dict(attrs, dropout_prob=0.0))["Out"],
                               atol=1e-12)
    assert (got["DropoutState"][0].numpy() == 1).all()
    ins["SequenceLength"] = np.array([3, 4, 0], np.int32)
    with pytest.raises(Exception, match=r"SequenceLength values must be in \[0, 3\]"):
        run_op("rnn", ins, ["Out"], attrs, CUDA, output_counts={"State": 2})


def test_rnn_gradients_equal_finite_differences():
    rng = np.random.default_rng(13)
    ins, attrs = _rnn_inputs(rng, "LSTM", 1, 2, lens=(3, 1))
    _directional_gradients("rnn", ins, attrs, ["Input", "PreState", "WeightList"],
                           ["Out", "State"])


# --- a training step ----------------------------------------------------------------------

def test_dynamic_lstm_trains_as_on_the_cpu_and_a_step_copies_only_its_feed_and_fetch(
        monkeypatch):
    """fc + dynamic_lstm + SGD, initialized once on the CPU: two steps on CUDAPlace give the
    CPU's losses, and the second step copies only its feed and its fetch (the LoD layout
    crossed once, in the first)."""
    from headrace.devices import cuda as dev

    def run(place, count=None):
        main, startup = hr.Program(), hr.Program()
        startup.random_seed = 3
        with hr.program_guard(main, startup):
            x = hr.layers.data("x", shape=[-1, 4], dtype="float32", lod_level=1)
            h, _ = hr.layers.dynamic_lstm(hr.layers.fc(x, size=8), size=8)
            loss = hr.layers.mean(h)
            hr.optimizer.SGD(learning_rate=0.5).minimize(loss)
        scope = hr.Scope()
        hr.Executor(hr.CPUPlace()).run(startup, scope=scope)
        exe = hr.Executor(place)
        feed = {"x": Tensor(np.random.default_rng(14).standard_normal((5, 4))
                            .astype("float32"), [[0, 2, 5]])}
        losses = []
        for step in range(2):
            if count is not None and step == 1:
                count()
            losses.append(float(exe.run(main, feed=feed, fetch_list=[loss], scope=scope)[0]))
        return losses

    copies = {"h2d": 0, "d2h": 0}

    def counter(f, kind):
        def counted(*args, **kwargs):
            copies[kind] += 1
            return f(*args, **kwargs)
        return counted

    def count():
        array_type = type(dev.cuda.device_array(1, np.float32))
        for owner, name, kind in ((dev.cuda, "to_device", "h2d"),
                                  (array_type, "copy_to_device", "h2d"),
                                  (array_type, "copy_to_host", "d2h")):
            monkeypatch.setattr(owner, name, counter(getattr(owner, name), kind))

    cpu, gpu = run(hr.CPUPlace()), run(CUDA, count)
    np.testing.assert_allclose(gpu, cpu, rtol=1e-5)
    assert cpu[1] != cpu[0]
    assert copies == {"h2d": 1, "d2h": 1}, copies
