"""conv_elementwise_add_act_fuse: a ``conv2d`` with its bias bound (``Bias``, as
conv_elementwise_add_fuse and batch_norm folding leave it, maybe with ``ResidualData``)
followed by ``relu`` becomes one ``fused_conv2d_add_act`` (Paddle Inference's
conv_elementwise_add_act_fuse_pass and its conv2d_fusion op): the relu runs in place over
the conv's Output instead of reading it and writing a second tensor. A biased conv2d that no
relu follows becomes the fused op with activation "identity", whose kernel writes its last
Output again in a steady run (conv2d allocates a new one each time).

Conditions: the conv2d binds one Bias (the fused op requires it, as Paddle's) and at most one
ResidualData; the relu is the only reader of the conv's Output, which is not fetched; the
relu's Out is written once. Skipped when no installed plugin defines the fused op. Paddle runs
fused_conv2d_add_act with its cuDNN kernel (GPU builds).
"""
from ..errors import UnknownOpError
from . import _graph

NAME = "conv_elementwise_add_act_fuse"
FUSED = "fused_conv2d_add_act"


def _relu_after(block, conv, out):
    rd = _graph.readers(block, out)
    if len(rd) != 1 or rd[0].type != "relu" or not _graph.sole_reader(block, out, rd[0]) or \
            not _graph.well_formed(rd[0], ("X",), ("Out",)) or \
            block.ops.index(rd[0]) < block.ops.index(conv):
        return None
    relu = rd[0]
    return relu if len(_graph.writers(block, relu.output("Out")[0])) == 1 else None


def run(program, scope, place):
    block = program.global_block()
    try:
        block.program.registry.get(FUSED)
    except UnknownOpError:
        return 0
    changed = 0
    for conv in [op for op in block.ops if op.type == "conv2d"]:
        if len(conv.input("Bias")) != 1 or len(conv.input("ResidualData")) > 1 or \
                not _graph.well_formed(conv, ("Input", "Filter"), ("Output",)):
            continue
        out = conv.output("Output")[0]
        relu = _relu_after(block, conv, out)
        fused, result = [conv], out
        if relu is not None:
            fused.append(relu)
            result = relu.output("Out")[0]
        inputs = {k: v for k, v in conv.inputs.items() if v}
        # use_mkldnn (set by the bias and residual passes for Paddle's oneDNN conv2d) off:
        # Paddle has no oneDNN kernel of the fused op.
        _graph.replace(block, fused, FUSED, inputs, {"Output": [result]}, attrs_of=conv,
                       attrs={"activation": "relu" if relu is not None else "identity",
                              "use_mkldnn": False})
        changed += 1
    return changed
