"""Write Paddle-format programs that use control flow, with the inputs fed and the outputs
Paddle computed, for tests/test_paddle_control_flow.py to run through headrace.

Needs PaddlePaddle 3.3.1 (legacy static mode; never a headrace dependency):

    pip install paddlepaddle==3.3.1
    python scripts/make_paddle_control_flow_fixtures.py [--out tests/data/paddle_control_flow]

Each fixture is a directory with ``model.pdmodel`` (and ``model.pdiparams`` when it has
parameters), ``io.npz`` (``in:<feed name>`` and ``out:<k>`` arrays), and ``ops.txt``, the op
types of its blocks (what the fixture is meant to exercise).
"""
import argparse
import os
import pathlib

os.environ.setdefault("FLAGS_enable_pir_api", "0")

import numpy as np  # noqa: E402
import paddle  # noqa: E402
from paddle.base.layer_helper import LayerHelper  # noqa: E402
from paddle.static import nn as snn  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle_control_flow"


def _op(op_type, inputs, dtype=None, attrs=None):
    """Append ``op_type`` with the legacy IR's LayerHelper: in Paddle 3.3's legacy static mode
    several paddle.* functions (tanh, exp, sum, logical_and, ...) accept PIR values only."""
    helper = LayerHelper(op_type)
    first = next(iter(inputs.values()))[0]
    out = helper.create_variable_for_type_inference(dtype or first.dtype)
    helper.append_op(type=op_type, inputs=inputs, outputs={"Out": [out]}, attrs=attrs or {})
    return out


def _tanh(x):
    return _op("tanh", {"X": [x]})


def _sum(x):
    return _op("reduce_sum", {"X": [x]}, attrs={"reduce_all": True, "dim": [0],
                                                 "keep_dim": False})


def _and(a, b):
    return _op("logical_and", {"X": [a], "Y": [b]})


def cond_program():
    """cond (conditional_block + select_input) on the sign of sum(x)."""
    x = paddle.static.data("x", [3, 4], "float32")
    pred = paddle.mean(x) > 0
    out = snn.cond(pred, lambda: _tanh(x) * 2.0, lambda: _op("sigmoid", {"X": [x]}))
    return [x], [out]


def while_counter_program():
    """while_loop with an int64 counter and a stop that depends on the data; int64 scale,
    elementwise_add and increment on the counter."""
    x = paddle.static.data("x", [2, 3], "float32")
    limit = paddle.static.data("limit", [1], "int64")
    i = paddle.full([1], 0, "int64")
    j = paddle.full([1], 3, "int64")

    def cond(i, j, x):
        return _and(i < limit, paddle.mean(x) < 8.0)

    def body(i, j, x):
        j = paddle.add(paddle.scale(j, scale=2.0, bias=1.0), i)   # int64 scale and add
        x = x * 1.5 + 1.0
        i = paddle.increment(i)
        return [i, j, x]

    i, j, x = snn.while_loop(cond, body, [i, j, x])
    return [x, limit], [i, j, x]


def array_program():
    """Tensor arrays in a while loop: write x * t at t, then read them back and their
    length."""
    x = paddle.static.data("x", [2, 2], "float32")
    n = paddle.full([1], 4, "int64")
    i = paddle.full([1], 0, "int64")
    arr = paddle.tensor.create_array("float32")

    def cond(i, arr):
        return i < n

    def body(i, arr):
        paddle.tensor.array_write(x * paddle.cast(i, "float32"), i, array=arr)
        return [paddle.increment(i), arr]

    i, arr = snn.while_loop(cond, body, [i, arr])
    length = paddle.tensor.array_length(arr)
    two = paddle.full([1], 2, "int64")
    third = paddle.tensor.array_read(arr, two)
    return [x], [length, third]


def switch_case_program():
    """switch_case on an int64 index (nested conditional_blocks and select_input)."""
    index = paddle.static.data("index", [1], "int64")
    x = paddle.static.data("x", [3], "float32")
    out = snn.switch_case(index, {0: lambda: x + 1.0, 1: lambda: x * 3.0},
                          default=lambda: _op("exp", {"X": [x]}))
    return [index, x], [out]


def select_output_program():
    """select_output routes x to one of two outputs, select_input picks it back."""
    from paddle.static.nn.control_flow import select_input, select_output
    x = paddle.static.data("x", [2, 3], "float32")
    m = paddle.static.data("m", [1], "int32")
    block = paddle.static.default_main_program().current_block()
    outs = [block.create_var(name=f"routed_{k}", dtype="float32", shape=[2, 3])
            for k in range(2)]
    select_output(x * 2.0, outs, m)
    picked = select_input(outs, m)
    return [x, m], [picked]


def fc_cond_in_while_program():
    """A cond inside a while_loop whose body has an fc layer: its parameters live in the
    global block (saved in model.pdiparams) and are read at every step."""
    x = paddle.static.data("x", [2, 3], "float32")
    n = paddle.static.data("n", [1], "int64")
    i = paddle.full([1], 0, "int64")
    rng = np.random.default_rng(1)
    init = paddle.nn.initializer.Assign
    weight = paddle.ParamAttr(name="cell_w", initializer=init(
        rng.uniform(-1, 1, (3, 3)).astype("float32")))
    bias = paddle.ParamAttr(name="cell_b", initializer=init(
        rng.uniform(-0.5, 0.5, 3).astype("float32")))

    def cond(i, h):
        return i < n

    def body(i, h):
        z = snn.fc(h, 3, weight_attr=weight, bias_attr=bias)
        h = snn.cond(paddle.mean(z) > 0, lambda: _tanh(z), lambda: z * 0.5)
        return [paddle.increment(i), h]

    i, h = snn.while_loop(cond, body, [i, x])
    return [x, n], [i, h]


def nested_while_program():
    """A while_loop inside a while_loop: the inner one runs i + 1 times and sums int64
    scale(j) into a counter; the outer one writes each step's x into a tensor array."""
    x = paddle.static.data("x", [2], "float32")
    n = paddle.static.data("n", [1], "int64")
    i = paddle.full([1], 0, "int64")
    total = paddle.full([1], 0, "int64")
    arr = paddle.tensor.create_array("float32")

    def outer_cond(i, total, x, arr):
        return i < n

    def outer_body(i, total, x, arr):
        j = paddle.full([1], 0, "int64")

        def inner_cond(j, total, x):
            return j < i + 1

        def inner_body(j, total, x):
            total = paddle.add(total, paddle.scale(j, scale=3.0, bias=1.0))
            return [paddle.increment(j), total, x * 0.9 + 0.1]

        j, total, x = snn.while_loop(inner_cond, inner_body, [j, total, x])
        paddle.tensor.array_write(x, i, array=arr)
        return [paddle.increment(i), total, x, arr]

    i, total, x, arr = snn.while_loop(outer_cond, outer_body, [i, total, x, arr])
    return [x, n], [i, total, x, paddle.tensor.array_length(arr)]


def case_program():
    """case with two predicates and a default (conditional_blocks chained by select_input)."""
    x = paddle.static.data("x", [3], "float32")
    s = paddle.mean(x)
    out = snn.case([(s < -0.2, lambda: x - 1.0), (s > 0.2, lambda: x * 2.0)],
                   default=lambda: _op("abs", {"X": [x]}))
    return [x], [out]


def array_read_loop_program():
    """Tensor arrays read inside a while_loop bounded by their length: three items written
    before the loop, each read back at step i, summed, and written again at i + length."""
    x = paddle.static.data("x", [3, 2], "float32")
    arr = paddle.tensor.create_array("float32")
    for k in range(3):
        paddle.tensor.array_write(x * float(k + 1), paddle.full([1], k, "int64"), array=arr)
    n = paddle.tensor.array_length(arr)
    i = paddle.full([1], 0, "int64")
    acc = paddle.zeros([3, 2], "float32")

    def cond(i, acc, arr):
        return i < n

    def body(i, acc, arr):
        item = paddle.tensor.array_read(arr, i)
        paddle.tensor.array_write(item + acc, i + n, array=arr)    # int64 elementwise_add
        return [paddle.increment(i), acc + item * item, arr]

    i, acc, arr = snn.while_loop(cond, body, [i, acc, arr])
    last = paddle.tensor.array_read(arr, paddle.tensor.array_length(arr) - 1)
    return [x], [i, acc, paddle.tensor.array_length(arr), last]


def cond_struct_program():
    """cond whose branches return a nested structure (a tensor and a dict of a 0-D mean and
    an int64 constant), on a fed bool."""
    x = paddle.static.data("x", [2, 2], "float32")
    flag = paddle.static.data("flag", [1], "bool")
    a, d = snn.cond(flag,
                    lambda: (x + 1.0, {"s": paddle.mean(x), "i": paddle.full([1], 7, "int64")}),
                    lambda: (x * x, {"s": paddle.mean(x) * 2.0,
                                     "i": paddle.full([1], -1, "int64")}))
    return [x, flag], [a, d["s"], d["i"]]


def _feeds(name, rng):
    x = {"cond_pos": rng.uniform(0.1, 1, (3, 4)), "cond_neg": -rng.uniform(0.1, 1, (3, 4))}
    if name in ("cond_pos", "cond_neg"):
        return [{"x": x[name].astype("float32")}]
    if name == "while_counter":
        return [{"x": rng.uniform(0, 1, (2, 3)).astype("float32"),
                 "limit": np.array([20], "int64")},
                {"x": rng.uniform(0, 1, (2, 3)).astype("float32"),
                 "limit": np.array([2], "int64")},
                {"x": rng.uniform(0, 1, (2, 3)).astype("float32"),      # no step
                 "limit": np.array([0], "int64")}]
    if name == "array":
        return [{"x": rng.uniform(-1, 1, (2, 2)).astype("float32")}]
    if name.startswith("switch_case"):
        k = int(name[-1])
        return [{"index": np.array([k], "int64"), "x": rng.uniform(-1, 1, 3).astype("float32")}]
    if name in ("fc_cond_in_while", "nested_while"):
        shape = (2, 3) if name == "fc_cond_in_while" else 2
        return [{"x": rng.uniform(-1, 1, shape).astype("float32"), "n": np.array([k], "int64")}
                for k in (3, 0)]
    if name == "case":
        return [{"x": x} for x in (np.array([-1, -1, 0], "float32"),
                                   np.array([1, 1, 0], "float32"),
                                   np.array([0, 0.1, 0], "float32"))]
    if name == "array_read_loop":
        return [{"x": rng.uniform(-1, 1, (3, 2)).astype("float32")}]
    if name == "cond_struct":
        return [{"x": rng.uniform(-1, 1, (2, 2)).astype("float32"), "flag": np.array([f])}
                for f in (True, False)]
    if name.startswith("select_output"):
        return [{"x": rng.uniform(-1, 1, (2, 3)).astype("float32"),
                 "m": np.array([int(name[-1])], "int32")}]
    raise KeyError(name)


FIXTURES = {"cond_pos": cond_program, "cond_neg": cond_program,
            "while_counter": while_counter_program, "array": array_program,
            "switch_case_0": switch_case_program, "switch_case_1": switch_case_program,
            "switch_case_9": switch_case_program, "select_output_0": select_output_program,
            "select_output_1": select_output_program,
            "fc_cond_in_while": fc_cond_in_while_program,
            "nested_while": nested_while_program, "case": case_program,
            "array_read_loop": array_read_loop_program, "cond_struct": cond_struct_program}


def make(out_dir):
    paddle.enable_static()
    # Paddle's own cond/switch_case call these PIR-only functions: give them legacy ops.
    paddle.logical_not = lambda x, out=None, name=None: _op("logical_not", {"X": [x]})
    paddle.logical_and = lambda x, y, out=None, name=None: _and(x, y)
    rng = np.random.default_rng(0)
    for name, build in FIXTURES.items():
        main, startup = paddle.static.Program(), paddle.static.Program()
        with paddle.static.program_guard(main, startup):
            feeds, fetches = build()
        exe = paddle.static.Executor(paddle.CPUPlace())
        where = pathlib.Path(out_dir) / name
        where.mkdir(parents=True, exist_ok=True)
        arrays = {}
        for k, feed in enumerate(_feeds(name, rng)):
            # A fresh scope per feed: Paddle keeps a tensor array's items in the scope from
            # one run to the next (a loop of no step would report the last run's length).
            with paddle.static.scope_guard(paddle.static.Scope()):
                exe.run(startup)
                results = exe.run(main, feed=feed, fetch_list=fetches)
                paddle.static.save_inference_model(str(where / "model"), feeds, fetches, exe,
                                                   program=main)
            arrays.update({f"{k}/in:{n}": v for n, v in feed.items()})
            arrays.update({f"{k}/out:{j}": np.asarray(v) for j, v in enumerate(results)})
        np.savez(where / "io.npz", **arrays)
        types = sorted({op.type for b in main.blocks for op in b.ops})
        (where / "ops.txt").write_text("\n".join(types) + "\n")
        print(name, types)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(HERE))
    make(parser.parse_args().out)
