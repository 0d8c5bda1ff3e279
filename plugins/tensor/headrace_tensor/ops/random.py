"""Random tensors: uniform_random and gaussian_random. No gradient.

seed 0 means: take the program's random_seed, or a fresh random seed when that is 0 too. The
program's seed is written into the op when it is built (``seed_attr``, see
headrace/framework/seeds.py), so a serialized program draws the same numbers anywhere.
"""
import math

from headrace.ops import Attr, OpDef, Out
from headrace.ops.shape import numel

from ._common import FLOAT_DTYPES, dtype_attr, enum_name, shape_from_inputs, shape_tensor_inputs


def _non_negative(v):
    return "must be >= 0" if v < 0 else None


def _finite(v):
    return None if math.isfinite(v) else "must be finite"


def _common_attrs():
    return [
        Attr("shape", "longs", [], "shape of Out; -1 only where a shape tensor gives the dim"),
        Attr("seed", "int", 0, "random seed; 0 = the program's seed, or random",
             check=_non_negative),
        dtype_attr("dtype", "float32", "element type of Out: a float type (VarType enum)",
                   allowed=FLOAT_DTYPES),
    ]


def _infer_uniform(ctx):
    lo, hi = ctx.attr("min"), ctx.attr("max")
    if not lo < hi:
        ctx.fail("attribute 'min' must be less than 'max'", expected="min < max",
                 found=f"min={lo}, max={hi}")
    shape = shape_from_inputs(ctx)
    diag_num, diag_step = ctx.attr("diag_num"), ctx.attr("diag_step")
    n = numel(shape)
    if diag_num > 0 and n >= 0 and (diag_num - 1) * (diag_step + 1) >= n:
        ctx.fail("the diagonal set by 'diag_num'/'diag_step' runs past the end of Out",
                 expected=f"(diag_num - 1) * (diag_step + 1) < numel(Out) = {n}",
                 found=f"diag_num={diag_num}, diag_step={diag_step}")
    ctx.set_output("Out", shape, enum_name(ctx.attr("dtype")))


uniform_random = OpDef(
    "uniform_random",
    inputs=shape_tensor_inputs(),
    outputs=[Out("Out", "uniform samples in [min, max)")],
    attrs=_common_attrs() + [
        Attr("min", "float", -1.0, "lower bound (inclusive)", check=_finite),
        Attr("max", "float", 1.0, "upper bound (exclusive)", check=_finite),
        Attr("diag_num", "int", 0, "number of diagonal elements set to diag_val",
             check=_non_negative),
        Attr("diag_step", "int", 0, "flat-index step between those elements, minus one",
             check=_non_negative),
        Attr("diag_val", "float", 1.0, "value of the diagonal elements"),
    ],
    infer=_infer_uniform,
    differentiable=False,
    seed_attr="seed",
    doc="Out = samples of U[min, max) with the given shape and dtype; the first diag_num "
        "elements at flat index i * (diag_step + 1) are then set to diag_val.",
)


def _infer_gaussian(ctx):
    ctx.set_output("Out", shape_from_inputs(ctx), enum_name(ctx.attr("dtype")))


gaussian_random = OpDef(
    "gaussian_random",
    inputs=shape_tensor_inputs(),
    outputs=[Out("Out", "normal samples")],
    attrs=_common_attrs() + [
        Attr("mean", "float", 0.0, "mean of the distribution", check=_finite),
        Attr("std", "float", 1.0, "standard deviation (>= 0)",
             check=lambda v: "must be finite and >= 0" if not (math.isfinite(v) and v >= 0)
             else None),
    ],
    infer=_infer_gaussian,
    differentiable=False,
    seed_attr="seed",
    doc="Out = samples of N(mean, std^2) with the given shape and dtype.",
)

OPS = [uniform_random, gaussian_random]
