"""sequence_conv: Paddle's context projection (its documented example, and Paddle 3.3.1's
numbers for trained padding rows around short sequences), each sequence against
torch.nn.functional.conv1d (zero padding, and PaddingData as rows around the sequence), the
gradients of X, Filter and PaddingData against finite differences, LoD edge cases (empty
sequences, one sequence, no rows; two LoD levels refused, as Paddle refuses them), errors, and
the layer."""
import numpy as np
import pytest

import headrace as hr
from headrace import layers
from headrace.ops.grad import GradContext
from headrace.runtime.tensor import Tensor, create_lod_tensor
from headrace.testing import check_grad, program_gradients, run_op
from headrace_nn.reference.sequence_conv import sequence_conv as reference

torch = pytest.importorskip("torch")

DTYPES = ["float32", "float64"]
TOL = {"float32": 1e-5, "float64": 1e-12}


def _conv(x, w, pad=None, **attrs):
    ins = {"X": x, "Filter": w}
    if pad is not None:
        ins["PaddingData"] = pad
    (out,) = run_op("sequence_conv", ins, attrs=attrs)["Out"]
    return out


def _torch_conv(x, lengths, w, start, length, pad=None):
    """Each sequence through conv1d: zeros (or PaddingData's up rows before it and down rows
    after it) around the sequence, the output row t at conv position t + start + up."""
    d = x.shape[1]
    up, down = max(0, -start), max(0, start + length - 1)
    # Filter [length * D, M] row j * D + c is conv1d's weight[m, c, j].
    weight = torch.from_numpy(np.ascontiguousarray(
        w.astype(np.float64).reshape(length, d, -1).transpose(2, 1, 0)))
    rows, b = [np.zeros((0, w.shape[1]))], 0
    for h in (h for h in lengths if h):
        seq = x[b:b + h].astype(np.float64)
        before = np.zeros((up, d)) if pad is None else pad[:up].astype(np.float64)
        after = np.zeros((down, d)) if pad is None else pad[up:].astype(np.float64)
        ext = torch.from_numpy(np.concatenate([before, seq, after]).T[None].copy())
        y = torch.nn.functional.conv1d(ext, weight)[0].numpy().T
        rows.append(y[start + up:start + up + h])
        b += h
    return np.concatenate(rows)


def test_paddles_documented_example():
    # context_project.h: X = [a; b; c] [d] (D = 2), contextStart -1, contextLength 3. An
    # identity filter makes Out the projection itself.
    a, b, c, d = [1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]
    x = Tensor(np.array([a, b, c, d]), [[0, 3, 4]])
    out = _conv(x, np.eye(6), contextStart=-1, contextLength=3)
    z = [0.0, 0.0]
    np.testing.assert_array_equal(out.numpy(), [z + a + b, a + b + c, b + c + z, z + d + z])
    assert out.lod == [[0, 3, 4]]
    w12, w34 = [-1.0, -2.0], [-3.0, -4.0]   # the up-padding row, then the down-padding row
    out = _conv(x, np.eye(6), np.array([w12, w34]), contextStart=-1, contextLength=3,
                paddingTrainable=True)
    np.testing.assert_array_equal(out.numpy(),
                                  [w12 + a + b, a + b + c, b + c + w34, w12 + d + w34])


@pytest.mark.parametrize("start, length, expected", [
    # Paddle 3.3.1's Out for X = 1..6 (D = 1) in sequences of 1, 3, 0 and 2 rows (or one of
    # 4), PaddingData -1, -2, ... and an identity Filter: the projection itself.
    (-2, 3, [[-1, -2, 1], [-1, -2, 2], [-2, 2, 3], [2, 3, 4], [-1, -2, 5], [-2, 5, 6]]),
    (1, 3, [[-1, -2, -3], [3, 4, -1], [4, -1, -2], [-1, -2, -3], [6, -1, -2], [-1, -2, -3]]),
    (2, 2, [[-2, -3], [4, -1], [-1, -2], [-2, -3], [-1, -2], [-2, -3]]),
    (-1, 4, [[-1, 1, 2, 3], [1, 2, 3, 4], [2, 3, 4, -2], [3, 4, -2, -3]]),
])
def test_trained_padding_rows_as_paddle_reads_them(start, length, expected):
    lengths = [4] if len(expected) == 4 else [1, 3, 0, 2]
    t = sum(lengths)
    up, down = max(0, -start), max(0, start + length - 1)
    x = Tensor(np.arange(1.0, t + 1).reshape(t, 1), [list(np.cumsum([0] + lengths))])
    out = _conv(x, np.eye(length), -np.arange(1.0, up + down + 1).reshape(-1, 1),
                contextStart=start, contextLength=length, paddingTrainable=True)
    np.testing.assert_array_equal(out.numpy(), expected)


WINDOWS = [(s, n) for s in (-4, -2, -1, 0, 1, 2, 5) for n in (1, 2, 3, 4) if s + n >= 1]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("start, length", WINDOWS)
def test_each_sequence_is_torchs_conv1d(start, length, dtype):
    rng = np.random.default_rng(length * 10 + start + 4)
    lengths = [3, 0, 1, 6, 2]
    x = rng.standard_normal((12, 3)).astype(dtype)
    w = rng.standard_normal((length * 3, 4)).astype(dtype)
    out = _conv(Tensor(x, [list(np.cumsum([0] + lengths))]), w, contextStart=start,
                contextLength=length)
    assert out.numpy().dtype == dtype
    np.testing.assert_allclose(out.numpy(), _torch_conv(x, lengths, w, start, length),
                               rtol=TOL[dtype], atol=TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("start, length", [w for w in WINDOWS if w != (0, 1)])
def test_trained_padding_is_conv1d_over_the_padded_sequence(start, length, dtype):
    rng = np.random.default_rng(length * 10 + start + 4)
    lengths = [3, 0, 1, 6, 2]
    up, down = max(0, -start), max(0, start + length - 1)
    x = rng.standard_normal((12, 3)).astype(dtype)
    w = rng.standard_normal((length * 3, 4)).astype(dtype)
    pad = rng.standard_normal((up + down, 3)).astype(dtype)
    out = _conv(Tensor(x, [list(np.cumsum([0] + lengths))]), w, pad, contextStart=start,
                contextLength=length, paddingTrainable=True)
    np.testing.assert_allclose(out.numpy(), _torch_conv(x, lengths, w, start, length, pad),
                               rtol=TOL[dtype], atol=TOL[dtype])


def test_padding_data_is_ignored_unless_trainable():
    # Paddle's kernel reads PaddingData only with paddingTrainable.
    rng = np.random.default_rng(1)
    x = Tensor(rng.standard_normal((4, 2)), [[0, 4]])
    w = rng.standard_normal((6, 1))
    with_pad = _conv(x, w, np.ones((2, 2)), contextStart=-1, contextLength=3)
    np.testing.assert_array_equal(with_pad.numpy(),
                                  _conv(x, w, contextStart=-1, contextLength=3).numpy())


@pytest.mark.parametrize("lod", [[[0, 0, 0]], [[0]], [[0, 0]]])
def test_a_batch_without_rows(lod):
    out = _conv(Tensor(np.zeros((0, 2)), lod), np.ones((6, 5)), np.ones((2, 2)),
                contextStart=-1, contextLength=3, paddingTrainable=True)
    assert out.numpy().shape == (0, 5) and out.lod == lod


@pytest.mark.parametrize("lengths", [[5], [0, 4, 0], [1, 1, 1]])
def test_one_sequence_and_empty_ones(lengths):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((sum(lengths), 2))
    w = rng.standard_normal((6, 3))
    out = _conv(Tensor(x, [list(np.cumsum([0] + lengths))]), w, contextStart=-2,
                contextLength=3)
    np.testing.assert_allclose(out.numpy(), _torch_conv(x, lengths, w, -2, 3), atol=1e-12)


def _kernel(op_type, **attrs):
    from headrace_nn.kernels.cpu.sequence_conv import SequenceConv, SequenceConvGrad
    kind = SequenceConv if op_type == "sequence_conv" else SequenceConvGrad
    return kind(dict({"contextStart": 0, "contextStride": 1, "paddingTrainable": False},
                     **attrs))


def test_two_lod_levels_are_refused_as_paddle_refuses_them():
    x = Tensor(np.zeros((3, 2)), [[0, 1, 2], [0, 2, 2, 3]])
    with pytest.raises(hr.HeadraceError, match="X \\(x_0\\) must be a batch of sequences with "
                       "one LoD level"):
        _conv(x, np.zeros((6, 1)), contextStart=-1, contextLength=3)
    # The kernel checks the LoD it is given too (a LoD level can be fed to a variable that
    # declares fewer).
    for op_type in ("sequence_conv", "sequence_conv_grad"):
        kernel = _kernel(op_type, contextStart=-1, contextLength=3)
        args = (x, None, np.zeros((6, 1))) + ((np.zeros((3, 1)),) if "grad" in op_type else ())
        with pytest.raises(ValueError, match="exactly one LoD level"):
            kernel(*args)
    with pytest.raises(hr.HeadraceError, match="one LoD level"):
        with hr.program_guard(hr.Program(), hr.Program()):
            seq = layers.data("x", shape=[-1, 2], dtype="float64", lod_level=2)
            layers.sequence_conv(seq, 1)


# -- gradients ---------------------------------------------------------------------------------
GRAD_CASES = [
    # (lengths, contextStart, contextLength, paddingTrainable)
    ([3, 0, 1, 4], -2, 4, True),     # up- and down-padding, an empty and a 1-row sequence
    ([3, 0, 1, 4], -1, 3, False),
    ([2, 5], 1, 2, True),            # a window after the row: down-padding only
    ([1, 3, 2], 2, 2, False),        # sequences no longer than contextStart (Paddle's
    ([1, 3, 2], 2, 3, True),         # Filter gradient is stale there; this one is exact)
    ([4, 2], 0, 1, False),           # the row alone
    ([5], -3, 4, True),              # one sequence, a window ending at the row
]


@pytest.mark.parametrize("lengths, start, length, trainable", GRAD_CASES)
def test_gradients_match_finite_differences(lengths, start, length, trainable):
    rng = np.random.default_rng(sum(lengths) + 10 * length)
    t, d = sum(lengths), 2
    inputs = {"X": Tensor(rng.standard_normal((t, d)), [list(np.cumsum([0] + lengths))]),
              "Filter": rng.standard_normal((length * d, 3))}
    wrt = ["X", "Filter"]
    if trainable:
        inputs["PaddingData"] = rng.standard_normal((max(0, -start) +
                                                     max(0, start + length - 1), d))
        wrt.append("PaddingData")
    check_grad("sequence_conv", inputs, wrt=wrt,
               attrs={"contextStart": start, "contextLength": length,
                      "paddingTrainable": trainable})


@pytest.mark.parametrize("trainable", [False, True])
def test_padding_gets_a_gradient_only_when_trained(trainable):
    # Paddle's maker binds PaddingData and its gradient only with paddingTrainable.
    block = hr.Program().global_block()
    x = block.create_var(name="x", shape=[-1, 2], dtype="float64", lod_level=1)
    pad = block.create_var(name="pad", shape=[2, 2], dtype="float64")
    w = block.create_var(name="w", shape=[6, 1], dtype="float64")
    out = block.create_var(name="out", dtype="float64")
    op = block.append_op("sequence_conv", {"X": x, "PaddingData": pad, "Filter": w},
                         {"Out": out}, {"contextStart": -1, "contextLength": 3,
                                        "paddingTrainable": trainable})
    ctx = GradContext(op, {"x", "pad", "w"}, {"out@GRAD"})
    (spec,) = op.opdef.grad(ctx)
    assert spec.type == "sequence_conv_grad"
    assert ("PaddingData" in spec.inputs) == trainable
    assert set(spec.outputs) == {"X@GRAD", "Filter@GRAD"} | (
        {"PaddingData@GRAD"} if trainable else set())


@pytest.mark.parametrize("dtype", DTYPES)
def test_grad_kernel_matches_the_reference_in_both_dtypes(dtype):
    from headrace_nn.reference.sequence_conv import sample_sequence_conv_grad, \
        sequence_conv_grad
    inputs, attrs = sample_sequence_conv_grad(np.random.default_rng(3), dtype)
    slots = ["X@GRAD", "Filter@GRAD", "PaddingData@GRAD"]
    got = run_op("sequence_conv_grad", inputs, slots, attrs=attrs)
    want = sequence_conv_grad(inputs, attrs)
    for slot in slots:
        g = got[slot][0].numpy()
        assert g.dtype == dtype
        np.testing.assert_allclose(g, np.asarray(getattr(want[slot], "data", want[slot])),
                                   rtol=TOL[dtype] * 10, atol=TOL[dtype] * 10, err_msg=slot)


# -- errors ------------------------------------------------------------------------------------
def _build(attrs, x_shape=(-1, 2), w_shape=(6, 1), pad_shape=None, lod_level=1):
    main = hr.Program()
    block = main.global_block()
    ins = {"X": block.create_var(name="x", shape=list(x_shape), dtype="float32",
                                 lod_level=lod_level),
           "Filter": block.create_var(name="w", shape=list(w_shape), dtype="float32")}
    if pad_shape is not None:
        ins["PaddingData"] = block.create_var(name="pad", shape=list(pad_shape),
                                              dtype="float32")
    out = block.create_var(name="out", dtype="float32")
    block.append_op("sequence_conv", ins, {"Out": out}, attrs)
    return out


@pytest.mark.parametrize("kw, match", [
    (dict(attrs={"contextLength": 3, "contextStride": 2}), "contextStride.*must be 1"),
    (dict(attrs={"contextLength": 0}), "contextLength.*>= 1"),
    (dict(attrs={"contextLength": 2, "contextStart": -2}), "contextStart \\+ contextLength >= 1"),
    (dict(attrs={"contextLength": 3}, w_shape=(4, 1)), "Filter \\(w\\) must have contextLength"),
    (dict(attrs={"contextLength": 3, "paddingTrainable": True}), "needs the PaddingData"),
    (dict(attrs={"contextLength": 3, "contextStart": -1, "paddingTrainable": True},
          pad_shape=(3, 2)), "PaddingData \\(pad\\) must hold the 1 up- and 1 down"),
    (dict(attrs={"contextLength": 1, "paddingTrainable": True}, w_shape=(2, 1),
          pad_shape=(0, 2)), "no padding to train"),
    (dict(attrs={"contextLength": 3}, lod_level=0), "X \\(x\\) must be a batch of sequences"),
    (dict(attrs={"contextLength": 3}, x_shape=(-1, 2, 1)), "must be 2-D"),
])
def test_errors_name_the_op_and_what_was_expected(kw, match):
    with pytest.raises(hr.HeadraceError, match=match) as e:
        _build(**kw)
    assert "sequence_conv" in str(e.value)


def test_kernel_errors():
    # What the shape rule cannot see: the LoD, and kernels made without the rule.
    kernel = _kernel("sequence_conv", contextStart=-1, contextLength=3)
    w = np.zeros((6, 1))
    with pytest.raises(ValueError, match="LoD \\[0, 1, 4\\] must start at 0, not decrease"):
        kernel(Tensor(np.zeros((3, 2)), [[0, 1, 4]]), None, w)
    with pytest.raises(ValueError, match="found 0 levels"):
        kernel(Tensor(np.zeros((3, 2)), []), None, w)
    with pytest.raises(TypeError, match="Filter has dtype float32 but X is float64"):
        kernel(Tensor(np.zeros((3, 2)), [[0, 3]]), None, w.astype("float32"))
    with pytest.raises(ValueError, match="contextStride must be 1"):
        _kernel("sequence_conv", contextLength=3, contextStride=2)
    grad = _kernel("sequence_conv_grad", contextStart=-1, contextLength=3)
    with pytest.raises(ValueError, match="Out@GRAD"):
        grad(Tensor(np.zeros((3, 2)), [[0, 3]]), None, w, np.zeros((2, 1)))


# -- the layer ---------------------------------------------------------------------------------
def test_layer_as_fluids_and_its_gradients():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[-1, 3], dtype="float64", lod_level=1)
        y = layers.sequence_conv(x, num_filters=2, filter_size=4, act="tanh")
        loss = layers.mean(layers.sequence_pool(y, "sum"))
        hr.append_backward(loss)
    (op,) = [o for o in main.global_block().ops if o.type == "sequence_conv"]
    # Fluid: padding_start -(filter_size // 2), the filter [filter_size * D, num_filters].
    assert op.attr("contextStart") == -2 and op.attr("contextLength") == 4
    assert not op.attr("paddingTrainable")
    assert list(y.param.shape) == [12, 2] and list(y.bias.shape) == [2]
    (add,) = [o for o in main.global_block().ops if o.type == "elementwise_add"]
    assert add.attr("axis") == 1
    rng = np.random.default_rng(4)
    feed = {"x": create_lod_tensor(rng.standard_normal((6, 3)), [[2, 0, 4]])}
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    scope.get(y.bias.name).data[...] = [0.1, -0.2]
    (got,) = exe.run(main, feed=feed, fetch_list=[y], scope=scope, return_numpy=False)
    want = reference({"X": feed["x"], "Filter": scope.get(y.param.name).numpy()},
                     {"contextStart": -2, "contextLength": 4})["Out"]
    np.testing.assert_allclose(got.numpy(), np.tanh(np.asarray(want.data) + [0.1, -0.2]),
                               atol=1e-12)
    assert got.lod == [[0, 2, 2, 6]]
    analytic, numeric = program_gradients(main, startup, loss, [y.param.name, y.bias.name],
                                          feed)
    for name in analytic:
        np.testing.assert_allclose(analytic[name], numeric[name], rtol=1e-6, atol=1e-8)


def test_layer_arguments():
    with hr.program_guard(hr.Program(), hr.Program()):
        x = layers.data("x", shape=[-1, 3], dtype="float32", lod_level=1)
        y = layers.sequence_conv(x, 5, filter_size=3, padding_start=0, bias_attr=False)
        assert y.bias is None and list(y.shape)[1] == 5
        (op,) = [o for o in y.block.ops if o.type == "sequence_conv"]
        assert op.attr("contextStart") == 0 and op.attr("contextLength") == 3
        with pytest.raises(hr.HeadraceError, match="num_filters"):
            layers.sequence_conv(x, 0)
        with pytest.raises(hr.HeadraceError, match="contextStride"):
            layers.sequence_conv(x, 2, filter_stride=2)
        i = layers.data("i", shape=[-1, 3], dtype="int64", lod_level=1)
        with pytest.raises(hr.HeadraceError, match="float32 or float64"):
            layers.sequence_conv(i, 2)
