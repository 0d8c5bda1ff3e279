"""one_hot_v2: integer ids as one-hot rows of length depth (Paddle's v2: no trailing 1 on X;
the depth may come from a one-element tensor at run time). No gradient."""
from headrace.ops import Attr, In, OpDef, Out

from ._common import INT_INDEX_DTYPES, dtype_attr, enum_name


def _infer_one_hot(ctx):
    x = ctx.input("X")
    depth = -1 if ctx.has_input("depth_tensor") else ctx.attr("depth")
    if not ctx.has_input("depth_tensor") and depth < 1:
        ctx.fail("attribute 'depth' must be >= 1 (or depth_tensor given)",
                 expected="depth >= 1", found=f"depth = {depth}")
    ctx.set_output("Out", list(x.shape) + [depth], enum_name(ctx.attr("dtype")), x.lod_level)


one_hot_v2 = OpDef(
    "one_hot_v2",
    inputs=[In("X", "int32/int64 ids, any shape", dtypes=INT_INDEX_DTYPES),
            In("depth_tensor", "a one-element int tensor: the depth at run time (overrides "
               "'depth')", optional=True, dtypes=INT_INDEX_DTYPES)],
    outputs=[Out("Out", "X.shape + [depth]: 1 at each id, 0 elsewhere")],
    attrs=[Attr("depth", "int", -1, "the length of each one-hot row"),
           dtype_attr("dtype", "float32", "VarType of Out (default 5, float32)"),
           Attr("allow_out_of_range", "bool", False, "an id outside [0, depth) gives a row of "
                "zeros instead of an error")],
    infer=_infer_one_hot,
    differentiable=False,
    doc="Out[..., k] = 1 if X[...] == k else 0, for k in [0, depth); every id must lie in "
        "[0, depth) unless allow_out_of_range.",
)

OPS = [one_hot_v2]
