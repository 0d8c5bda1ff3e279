"""Write inference models of paddle.expand / expand_as, F.pad, F.label_smooth, paddle.full with
shapes and values from tensors, and integer divide / scale, with the inputs fed and the
outputs Paddle computed, for tests/test_paddle_manip.py to run through headrace.

Needs PaddlePaddle 3.3.1 (legacy static mode; never a headrace dependency):

    pip install paddlepaddle==3.3.1
    python scripts/make_paddle_manip_fixtures.py [--out tests/data/paddle_manip]

Each fixture is a directory with ``model.pdmodel``, ``io.npz`` (``<run>/in:<feed name>`` and
``<run>/out:<k>`` arrays) and ``ops.txt`` (the op types).
"""
import os
import pathlib

os.environ.setdefault("FLAGS_enable_pir_api", "0")

import numpy as np  # noqa: E402
import paddle  # noqa: E402

import paddle.nn.functional as F  # noqa: E402

import _paddle_inference  # noqa: E402  (beside this script: the fixtures' writer)

HERE = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle_manip"


def _legacy_op(op_type, inputs, attrs, like):
    """``op_type`` appended as Paddle 2.x's layer appended it (3.3.1's functions that have
    only a PIR path, such as paddle.expand_as)."""
    helper = paddle.base.layer_helper.LayerHelper(op_type)
    out = helper.create_variable_for_type_inference(like.dtype)
    helper.append_op(type=op_type, inputs=inputs, outputs={"Out": out}, attrs=attrs)
    return out


def expand_static():
    """expand_v2 with a constant shape (-1 keeps a dim, new leading dims), expand_as_v2."""
    x = paddle.static.data("x", [2, 1, 3], "float32")
    y = paddle.static.data("y", [-1, 2, 4, 3], "float32")
    # (paddle.expand_as of Paddle 2.x: Y and its build-time shape as target_shape)
    as_y = _legacy_op("expand_as_v2", {"X": x, "Y": y}, {"target_shape": y.shape}, x)
    return [x, y], [paddle.expand(x, [4, -1, 5, 3]), as_y], lambda rng: {
        "x": rng.standard_normal((2, 1, 3)), "y": rng.standard_normal((3, 2, 4, 3))}


def expand_tensors():
    """expand_v2 with a shape list holding a tensor (expand_shapes_tensor) and a shape tensor."""
    x = paddle.static.data("x", [2, 1, 3], "float32")
    n = paddle.static.data("n", [1], "int32")
    s = paddle.static.data("s", [3], "int32")
    return [x, n, s], [paddle.expand(x, [n, 2, 4, 3]), paddle.expand(x, s)], lambda rng: {
        "x": rng.standard_normal((2, 1, 3)), "n": np.array([int(rng.integers(1, 4))], "int32"),
        "s": np.array([2, int(rng.integers(1, 5)), 3], "int32")}


def pad_and_label_smooth():
    """pad (F.pad, constant mode over every dim) and label_smooth with and without a prior."""
    x = paddle.static.data("x", [2, 3], "float32")
    label = paddle.static.data("label", [-1, 4], "float32")
    prior = paddle.static.data("prior", [1, 4], "float32")
    outs = [F.pad(x, [1, 0, 2, 1], value=1.5), F.label_smooth(label, epsilon=0.1),
            F.label_smooth(label, prior_dist=prior, epsilon=0.25)]
    return [x, label, prior], outs, lambda rng: {
        "x": rng.standard_normal((2, 3)),
        "label": np.eye(4)[rng.integers(0, 4, 5)],
        "prior": rng.dirichlet(np.ones(4))[None]}


def full_from_tensors():
    """fill_constant with ShapeTensorList, ShapeTensor and ValueTensor (paddle.full)."""
    n = paddle.static.data("n", [1], "int64")
    s = paddle.static.data("s", [2], "int32")
    v = paddle.static.data("v", [1], "float32")
    outs = [paddle.full([n, 3], 2.5), paddle.full(s, 7, "int64"), paddle.full([2, 2], v)]
    return [n, s, v], outs, lambda rng: {
        "n": np.array([int(rng.integers(1, 5))], "int64"),
        "s": np.array([int(rng.integers(1, 4)), 2], "int32"),
        "v": rng.standard_normal(1)}


def integer_math():
    """elementwise ops and scale on int32 and int64 (division truncates toward zero)."""
    feeds, outs = [], []
    for dtype in ("int32", "int64"):
        a = paddle.static.data("a_" + dtype, [6], dtype)
        b = paddle.static.data("b_" + dtype, [6], dtype)
        feeds += [a, b]
        # (the legacy ops themselves: some of 3.3.1's functions have only a PIR path)
        outs += [_legacy_op("elementwise_" + op, {"X": a, "Y": b}, {"axis": -1}, a)
                 for op in ("add", "sub", "mul", "div", "max", "min")]
        outs += [_legacy_op("scale", {"X": a}, {"scale": 2.7, "bias": -0.6}, a),
                 _legacy_op("scale", {"X": a}, {"scale": 0.5, "bias": 1.5,
                                                "bias_after_scale": False}, a)]

    def feed(rng):
        values = {}
        for dtype in ("int32", "int64"):
            values["a_" + dtype] = rng.integers(-50, 50, 6).astype(dtype)
            b = rng.integers(-7, 8, 6)
            values["b_" + dtype] = np.where(b == 0, 3, b).astype(dtype)
        return values
    return feeds, outs, feed


PROGRAMS = {"expand_static": expand_static, "expand_tensors": expand_tensors,
            "pad_and_label_smooth": pad_and_label_smooth,
            "full_from_tensors": full_from_tensors, "integer_math": integer_math}


if __name__ == "__main__":
    _paddle_inference.main(PROGRAMS, HERE, __doc__.splitlines()[0])
