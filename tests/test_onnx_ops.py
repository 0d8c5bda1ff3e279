"""Every ONNX exporter, one small program per op: exported, checked by onnx.checker, run in
onnxruntime and compared with headrace's own kernels (the ops' NumPy-checked implementation).
The network tests (test_onnx_export.py) cover the ops they are built from; a test here makes
sure no exporter is left without a case."""
import zlib

import numpy as np
import pytest

import headrace as hr

onnx = pytest.importorskip("onnx", reason="ONNX export needs the onnx package "
                           "(pip install headrace[onnx])")
ort = pytest.importorskip("onnxruntime", reason="the exported files are run in onnxruntime "
                          "(pip install onnxruntime)")

TOL = 1e-5
FP32, INT64 = 5, 3          # VarType codes


def F(*shape):
    return ("float", shape)


def P(*shape):              # positive floats (log, sqrt, pow...)
    return ("positive", shape)


def I(hi, *shape):          # noqa: E743 - int64 ids in [0, hi)
    return ("int", shape, hi)


def B(*shape):
    return ("bool", shape)


def _act(op_type, **attrs):
    return (op_type, {"X": P(2, 5) if op_type in ("log", "sqrt", "rsqrt") else F(2, 5)},
            attrs, ["Out"])


# (op type, {input slot: spec or [specs]}, attributes, output slots); the id is the op type
# (and a suffix where one type has several cases).
CASES = {
    **{t: _act(t) for t in ("relu", "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt", "square",
                            "abs", "reciprocal", "softsign", "sin", "cos", "floor", "ceil",
                            "silu")},
    "leaky_relu": _act("leaky_relu", alpha=0.3),
    "elu": _act("elu", alpha=0.7),
    "relu6": _act("relu6", threshold=0.8),
    "hard_sigmoid": _act("hard_sigmoid", slope=0.3, offset=0.4),
    "softplus": _act("softplus", beta=2.0, threshold=1.5),
    "swish": _act("swish", beta=1.7),
    "gelu": _act("gelu"),
    "gelu-tanh": _act("gelu", approximate=True),
    "round": ("round", {"X": ("halves", (2, 6))}, {}, ["Out"]),
    **{f"elementwise_{k}": (f"elementwise_{k}", {"X": P(2, 3, 4), "Y": P(3)}, {"axis": 1},
                            ["Out"]) for k in ("add", "sub", "mul", "div", "max", "min", "pow")},
    "elementwise_add-numpy": ("elementwise_add", {"X": F(2, 3, 4), "Y": F(3, 4)}, {"axis": -1},
                              ["Out"]),
    **{t: (t, {"X": ("small_int", (3, 4)), "Y": ("small_int", (4,))}, {}, ["Out"])
       for t in ("equal", "not_equal", "less_than", "less_equal", "greater_than",
                 "greater_equal")},
    **{f"logical_{k}": (f"logical_{k}", {"X": B(2, 3), "Y": B(2, 3)}, {}, ["Out"])
       for k in ("and", "or", "xor")},
    "logical_not": ("logical_not", {"X": B(2, 3)}, {}, ["Out"]),
    "clip": ("clip", {"X": F(3, 4)}, {"min": -0.5, "max": 0.4}, ["Out"]),
    **{f"reduce_{k}": (f"reduce_{k}", {"X": P(2, 3, 4)}, {"dim": [-1, 0], "keep_dim": False},
                       ["Out"]) for k in ("sum", "mean", "max", "min", "prod")},
    "reduce_sum-all": ("reduce_sum", {"X": F(2, 3)}, {"reduce_all": True, "keep_dim": True},
                       ["Out"]),
    "mean": ("mean", {"X": F(3, 4)}, {}, ["Out"]),
    "cumsum": ("cumsum", {"X": F(3, 4)}, {"axis": 1, "exclusive": True, "reverse": True},
               ["Out"]),
    "cumsum-flatten": ("cumsum", {"X": F(3, 4)}, {"flatten": True}, ["Out"]),
    "matmul_v2": ("matmul_v2", {"X": F(2, 4, 3), "Y": F(2, 5, 4)},
                  {"trans_x": True, "trans_y": True}, ["Out"]),
    "matmul-1d": ("matmul", {"X": F(4), "Y": F(2, 4, 3)}, {"alpha": 0.5}, ["Out"]),
    "mul-3d": ("mul", {"X": F(2, 3, 4), "Y": F(4, 2, 3)},
               {"x_num_col_dims": 2, "y_num_col_dims": 1}, ["Out"]),
    "conv2d-groups": ("conv2d", {"Input": F(1, 4, 7, 6), "Filter": F(6, 2, 3, 2)},
                      {"strides": [2, 1], "paddings": [1, 0, 2, 1], "dilations": [1, 2],
                       "groups": 2}, ["Output"]),
    "conv2d-same": ("conv2d", {"Input": F(1, 2, 5, 5), "Filter": F(3, 2, 3, 3)},
                    {"strides": [2, 2], "padding_algorithm": "SAME"}, ["Output"]),
    "fused_conv-relu": ("fused_conv2d_add_act",
                        {"Input": F(2, 3, 6, 5), "Filter": F(4, 3, 3, 3), "Bias": F(4),
                         "ResidualData": F(2, 4, 6, 5)},
                        {"paddings": [1, 1], "activation": "relu"}, ["Output"]),
    "fused_conv-identity": ("fused_conv2d_add_act",
                            {"Input": F(1, 4, 7, 6), "Filter": F(6, 2, 3, 2), "Bias": F(6)},
                            {"strides": [2, 1], "paddings": [1, 0, 2, 1], "groups": 2,
                             "activation": "identity"}, ["Output"]),
    "pool2d-ceil": ("pool2d", {"X": F(1, 2, 7, 7)},
                    {"pooling_type": "max", "ksize": [3, 3], "strides": [2, 2],
                     "ceil_mode": True}, ["Out"]),
    "pool2d-avg-pad": ("pool2d", {"X": F(1, 2, 5, 5)},
                       {"pooling_type": "avg", "ksize": [3, 3], "strides": [2, 2],
                        "paddings": [1, 1], "exclusive": False}, ["Out"]),
    "pool2d-adaptive": ("pool2d", {"X": F(1, 2, 6, 4)},
                        {"pooling_type": "avg", "ksize": [3, 2], "adaptive": True}, ["Out"]),
    "instance_norm": ("instance_norm", {"X": F(2, 3, 4, 4), "Scale": F(3), "Bias": F(3)},
                      {"epsilon": 1e-5}, ["Y"]),
    "lookup_table_v2": ("lookup_table_v2", {"W": F(7, 3), "Ids": I(7, 2, 4)},
                        {"padding_idx": 2}, ["Out"]),
    "softmax-axis": ("softmax", {"X": F(2, 3, 4)}, {"axis": 1}, ["Out"]),
    "flatten_contiguous_range": ("flatten_contiguous_range", {"X": F(2, 3, 4, 5)},
                                 {"start_axis": 1, "stop_axis": 2}, ["Out"]),
    "reshape2": ("reshape2", {"X": F(2, 3, 4)}, {"shape": [0, -1, 2]}, ["Out"]),
    "transpose2": ("transpose2", {"X": F(2, 3, 4)}, {"axis": [2, 0, 1]}, ["Out"]),
    "squeeze2": ("squeeze2", {"X": F(2, 1, 3, 1)}, {"axes": [1, -1, 0]}, ["Out"]),
    "unsqueeze2": ("unsqueeze2", {"X": F(2, 3)}, {"axes": [0, -1, 2]}, ["Out"]),
    "concat": ("concat", {"X": [F(2, 3), F(2, 1), F(2, 2)]}, {"axis": -1}, ["Out"]),
    "split": ("split", {"X": F(2, 6)}, {"axis": 1, "sections": [1, -1, 2]}, ["Out"] * 3),
    "split-num": ("split", {"X": F(4, 3)}, {"axis": 0, "num": 2}, ["Out"] * 2),
    "slice": ("slice", {"Input": F(4, 5, 6)},
              {"axes": [0, 2], "starts": [1, -4], "ends": [2, 10000], "decrease_axis": [0]},
              ["Out"]),
    "strided_slice": ("strided_slice", {"Input": F(5, 6)},
                      {"axes": [0, 1], "starts": [4, 0], "ends": [0, 6], "strides": [-2, 3]},
                      ["Out"]),
    "gather": ("gather", {"X": F(5, 3), "Index": I(3, 4)}, {"axis": 1}, ["Out"]),
    "gather_nd": ("gather_nd", {"X": F(4, 5, 2), "Index": I(4, 3, 2)}, {}, ["Out"]),
    "cast": ("cast", {"X": F(2, 3)}, {"in_dtype": FP32, "out_dtype": INT64}, ["Out"]),
    "shape": ("shape", {"Input": F(2, 3, 4)}, {}, ["Out"]),
    "expand_v2": ("expand_v2", {"X": F(3, 1)}, {"shape": [2, -1, 4]}, ["Out"]),
    "expand": ("expand", {"X": F(2, 3)}, {"expand_times": [2, 3]}, ["Out"]),
    "stack": ("stack", {"X": [F(2, 3), F(2, 3)]}, {"axis": -1}, ["Y"]),
    "where": ("where", {"Condition": B(2, 3), "X": F(2, 3), "Y": F(2, 3)}, {}, ["Out"]),
    "pad": ("pad", {"X": F(2, 3)}, {"paddings": [1, 0, 2, 3], "pad_value": 0.5}, ["Out"]),
    "arg_max": ("arg_max", {"X": F(3, 5)}, {"axis": 1, "keepdims": True}, ["Out"]),
    "arg_min": ("arg_min", {"X": F(3, 5)}, {"axis": 0, "dtype": 2, "flatten": True}, ["Out"]),
    "top_k": ("top_k", {"X": F(3, 6)}, {"k": 2}, ["Out", "Indices"]),
    "scale-before": ("scale", {"X": F(2, 3)}, {"scale": 3.0, "bias": 0.5,
                                               "bias_after_scale": False}, ["Out"]),
    "assign": ("assign", {"X": F(2, 3)}, {}, ["Out"]),
    "sum": ("sum", {"X": [F(2, 3), F(2, 3), F(2, 3)]}, {}, ["Out"]),
    "fill_constant": ("fill_constant", {}, {"shape": [2, 3], "dtype": INT64,
                                            "str_value": "9007199254740993"}, ["Out"]),
    "fill_zeros_like": ("fill_zeros_like", {"X": F(2, 3)}, {}, ["Out"]),
    "fill_any_like": ("fill_any_like", {"X": F(2, 3)}, {"value": 2.5, "dtype": INT64},
                      ["Out"]),
}

# Exporters whose cases are the networks of test_onnx_export.py.
IN_NETWORK_TESTS = {"batch_norm", "layer_norm", "lookup_table", "dropout", "matmul", "mul",
                    "softmax", "conv2d", "pool2d", "scale", "elementwise_add"}


def _value(spec, rng):
    kind, shape = spec[0], spec[1]
    if kind == "float":
        return rng.standard_normal(shape).astype(np.float32)
    if kind == "positive":
        return rng.uniform(0.5, 2.0, shape).astype(np.float32)
    if kind == "halves":                     # ties, where rounding modes differ
        return (rng.integers(-6, 6, shape) + 0.5).astype(np.float32)
    if kind == "small_int":                  # comparisons with ties
        return rng.integers(0, 3, shape).astype(np.float32)
    if kind == "int":
        return rng.integers(0, spec[2], shape).astype(np.int64)
    return rng.random(shape) < 0.5


def _build(op_type, inputs, attrs, out_slots, rng):
    main, startup = hr.Program(), hr.Program()
    feed, bound = {}, {}
    with hr.program_guard(main, startup):
        for slot, specs in inputs.items():
            many = isinstance(specs, list)
            bound[slot] = []
            for i, spec in enumerate(specs if many else [specs]):
                name = f"{slot.lower()}{i}"
                feed[name] = _value(spec, rng)
                bound[slot].append(hr.layers.data(name, list(feed[name].shape),
                                                  dtype=feed[name].dtype.name,
                                                  append_batch_size=False))
        helper = hr.LayerHelper(op_type)
        outs = {}
        for slot in out_slots:
            outs.setdefault(slot, []).append(helper.create_variable_for_type_inference("float32"))
        helper.append_op(type=op_type, inputs=bound, outputs=outs, attrs=attrs)
    return main, feed, [v for slot in dict.fromkeys(out_slots) for v in outs[slot]]


@pytest.mark.parametrize("case", sorted(CASES))
def test_op_matches_onnxruntime(case, tmp_path):
    op_type, inputs, attrs, out_slots = CASES[case]
    main, feed, targets = _build(op_type, inputs, attrs, out_slots,
                                 np.random.default_rng(zlib.crc32(case.encode())))
    exe = hr.Executor(hr.CPUPlace())
    expected = exe.run(main, feed=feed, fetch_list=targets, scope=hr.Scope())
    path = tmp_path / "op.onnx"
    hr.onnx.export(main, list(feed), targets, path, scope=hr.Scope())
    got = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feed)
    for var, e, g in zip(targets, expected, got):
        assert g.dtype == e.dtype and g.shape == e.shape, (var.name, g.dtype, g.shape, e.shape)
        if np.issubdtype(e.dtype, np.floating):
            np.testing.assert_allclose(g, e, rtol=TOL, atol=TOL, err_msg=var.name)
        else:
            np.testing.assert_array_equal(g, e, err_msg=var.name)


def test_every_exporter_has_a_case():
    covered = {c[0] for c in CASES.values()} | IN_NETWORK_TESTS
    missing = sorted(set(hr.onnx.build_exporters(autoload=False).types()) - covered)
    assert not missing, f"exporters without a test case: {missing}"
