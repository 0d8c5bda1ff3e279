"""map_matmul_to_mul: ``matmul_v2`` (and ``matmul`` with alpha 1) of an activation and a
parameter matrix, without transposes, becomes ``mul`` (Paddle Inference's
gpu_cpu_map_matmul_v2_to_mul_pass / map_matmul_to_mul_pass), so that fc_fuse can fuse
Paddle 2.x's Linear layers (matmul_v2 + elementwise_add) as it fuses Fluid's fc layers.

Conditions: Y is a persistable [K, N] matrix; X has rank >= 2 (a 1-D X drops a dim that mul
keeps); no transposes; alpha 1. mul flattens X at x_num_col_dims = rank(X) - 1, which for
these shapes is the same product.
"""
from . import _graph

NAME = "map_matmul_to_mul"

FLAGS = {"matmul_v2": ("trans_x", "trans_y"), "matmul": ("transpose_X", "transpose_Y")}


def run(program, scope, place):
    block = program.global_block()
    changed = 0
    for op in [o for o in block.ops if o.type in FLAGS]:
        if not _graph.well_formed(op, ("X", "Y"), ("Out",)):
            continue
        a = op.attrs
        if any(a.get(flag, False) for flag in FLAGS[op.type]) or \
                float(a.get("alpha", 1.0)) != 1.0:
            continue
        x = block._find_var_recursive(op.input("X")[0])
        y = block._find_var_recursive(op.input("Y")[0])
        if x is None or y is None or not y.persistable or len(y.shape) != 2 or \
                len(x.shape) < 2:
            continue
        _graph.replace(block, [op], "mul", {"X": op.input("X"), "Y": op.input("Y")},
                       {"Out": op.output("Out")}, attrs_of=op,
                       attrs={"x_num_col_dims": len(x.shape) - 1, "y_num_col_dims": 1})
        changed += 1
    return changed
