"""fc_fuse: ``mul`` + ``elementwise_add`` of a bias (+ ``relu``) becomes one ``fc`` op
(Paddle Inference's fc_fuse_pass, with_relu): one GEMM and one pass over the output that adds
the bias and applies the activation, instead of three kernels each reading and writing it.

Conditions: the mul's Y is a persistable matrix (y_num_col_dims 1); the added operand is a
persistable [N] (or [1, N]) bias added along the last dim of the mul's output (axis -1, or
axis = x_num_col_dims); each intermediate is read only by the next op and not fetched. The
fc's in_num_col_dims is the mul's x_num_col_dims. Skipped when no installed plugin defines
``fc``.
"""
from ..errors import UnknownOpError
from . import _graph

NAME = "fc_fuse"


def _bias(block, add, x_name, n_cols, x_num_col_dims):
    if add.type != "elementwise_add" or add.input("X") != [x_name] or \
            not _graph.well_formed(add, ("Y",), ("Out",)):
        return None
    (y,) = add.input("Y") or [None]
    var = block._find_var_recursive(y) if y else None
    if var is None or not var.persistable or list(var.shape) not in ([n_cols], [1, n_cols]):
        return None
    axis = add.attrs.get("axis", -1)
    return y if axis in (-1, x_num_col_dims) else None


def _next(block, name, op_before):
    """The only reader of temporary ``name`` (written by ``op_before``), else None."""
    found = _graph.readers(block, name)
    if len(found) == 1 and _graph.sole_reader(block, name, found[0]) and \
            block.ops.index(found[0]) > block.ops.index(op_before):
        return found[0]
    return None


def run(program, scope, place):
    block = program.global_block()
    try:
        block.program.registry.get("fc")
    except UnknownOpError:
        return 0
    changed = 0
    for mul in [op for op in block.ops if op.type == "mul"]:
        if not _graph.well_formed(mul, ("X", "Y"), ("Out",)):
            continue
        a = mul.attrs
        w = block._find_var_recursive(mul.input("Y")[0])
        if w is None or not w.persistable or len(w.shape) != 2 or \
                a.get("y_num_col_dims", 1) != 1:
            continue
        out = mul.output("Out")[0]
        add = _next(block, out, mul)
        xn = a.get("x_num_col_dims", 1)
        bias = None if add is None else _bias(block, add, out, w.shape[1], xn)
        if bias is None:
            continue
        fused, result, act = [mul, add], add.output("Out")[0], ""
        relu = _next(block, result, add)
        if relu is not None and relu.type == "relu" and _graph.well_formed(relu, (), ("Out",)):
            fused.append(relu)
            result, act = relu.output("Out")[0], "relu"
        _graph.replace(block, fused, "fc",
                       {"Input": mul.input("X"), "W": mul.input("Y"), "Bias": [bias]},
                       {"Out": [result]}, attrs_of=mul,
                       attrs={"in_num_col_dims": xn, "activation_type": act})
        changed += 1
    return changed
