"""conv_residual_fuse: ``elementwise_add`` of a ``conv2d``'s output and another tensor of the
same shape (a residual block's shortcut) becomes the conv2d's ``ResidualData`` input
(Paddle's conv2d with fuse_residual_connection, as its conv_elementwise_add_mkldnn_fuse_pass
writes it): the kernel starts its output from the shortcut, instead of a separate op reading
both and writing a third tensor.

Conditions: the conv's output is read only by the add and not fetched; the other operand is
not the conv's own output, has the same declared shape and dtype, and is written before the
conv (or is fed or persistable); the add broadcasts nothing (axis -1 or 0 with equal ranks);
the conv has no ResidualData yet.

Paddle's plain conv2d kernels ignore ResidualData (and Bias); its oneDNN kernel reads them,
so the fused op is marked use_mkldnn and fuse_residual_connection, as Paddle's own pass
leaves it.
"""
from . import _graph

NAME = "conv_residual_fuse"


def _same_shape(block, a, b):
    va, vb = block._find_var_recursive(a), block._find_var_recursive(b)
    return va is not None and vb is not None and list(va.shape) == list(vb.shape) and \
        va.dtype == vb.dtype and -1 not in list(va.shape)[1:]


def _available(block, name, conv):
    found = _graph.writers(block, name)
    if not found:
        return True    # fed or persistable
    return len(found) == 1 and block.ops.index(found[0]) < block.ops.index(conv)


def run(program, scope, place):
    block = program.global_block()
    changed = 0
    for conv in [op for op in block.ops if op.type == "conv2d"]:
        if conv.input("ResidualData") or \
                conv.attrs.get("data_format", "NCHW") not in ("NCHW", "AnyLayout") or \
                not _graph.well_formed(conv, ("Input", "Filter"), ("Output",)):
            continue
        out = conv.output("Output")[0]
        rd = _graph.readers(block, out)
        if len(rd) != 1 or rd[0].type != "elementwise_add" or \
                not _graph.sole_reader(block, out, rd[0]):
            continue
        add = rd[0]
        x, y = add.input("X"), add.input("Y")
        if len(x) != 1 or len(y) != 1 or add.attrs.get("axis", -1) not in (-1, 0) or \
                not _graph.well_formed(add, (), ("Out",)):
            continue
        other = y[0] if x[0] == out else x[0]
        if other == out or not _same_shape(block, out, other) or \
                not _available(block, other, conv):
            continue
        _graph.replace(block, [conv, add], "conv2d", dict(conv.inputs, ResidualData=[other]),
                       {"Output": add.output("Out")}, attrs_of=conv,
                       attrs={"fuse_residual_connection": True, "use_mkldnn": True})
        changed += 1
    return changed
