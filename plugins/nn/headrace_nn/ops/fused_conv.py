"""fused_conv2d_add_act: Paddle Inference's fused convolution (its conv2d_fusion, renamed
fused_conv2d_add_act in Paddle 2.6), Output = act(conv2d(Input, Filter) + Bias + ResidualData).

No user layer emits it: the inference pass headrace.passes.conv_act_fuse rewrites a conv2d
with a bound Bias (and maybe ResidualData) followed by its activation into it, so the
activation is applied over each block of Output the conv has just written instead of by a
separate op reading and writing the whole tensor again. Inference only (no gradient), as in
Paddle. Paddle's Outputs slot (the split_channels form) is declared for loading Paddle's
programs; headrace never splits (split_channels must be empty).
"""
from headrace.ops import Attr, In, OpDef, Out

from ._common import FLOATS
from .conv import _output_shape, conv2d

# Paddle's conv2d_fusion knows more (sigmoid, tanh, relu6...); these are the ones a pass
# fuses here.
ACTIVATIONS = ("identity", "relu")
_CONV_ATTRS = ("strides", "paddings", "dilations", "groups", "data_format", "padding_algorithm")


def _infer(ctx):
    x = ctx.input("Input")
    ctx.set_output("Output", _output_shape(ctx), x.dtype, x.lod_level)


def _no_split(value):
    return None if not value else "headrace does not split the output (must be empty)"


fused_conv2d_add_act = OpDef(
    "fused_conv2d_add_act",
    inputs=[In("Input", "images [N, C, H, W] (NHWC: [N, H, W, C])", dtypes=FLOATS),
            In("Filter", "filters [M, C/groups, kh, kw] in every data_format", dtypes=FLOATS),
            In("Bias", "[M], added per output channel", dtypes=FLOATS),
            In("ResidualData", "added to Output before the activation (a shortcut)",
               optional=True, dtypes=FLOATS)],
    outputs=[Out("Output", "act(conv + Bias + ResidualData), conv2d's Output shape"),
             Out("Outputs", "Paddle's split_channels outputs (never bound here)",
                 duplicable=True, optional=True)],
    attrs=[conv2d.attrs[name] for name in _CONV_ATTRS] + [
        Attr("activation", "string", "relu", "applied last: 'identity' or 'relu'",
             choices=ACTIVATIONS),
        Attr("split_channels", "ints", [], "Paddle's output split; must be empty",
             check=_no_split),
        Attr("exhaustive_search", "bool", False, "cuDNN algorithm search (no effect here)"),
        Attr("workspace_size_MB", "int", 512, "cuDNN workspace (no effect here)"),
        Attr("fuse_alpha", "float", 0.0, "parameter of Paddle's parametric activations "
             "(unused by identity and relu)"),
    ],
    infer=_infer,
    differentiable=False,
    doc="Output = act(conv2d(Input, Filter) + Bias[m] per channel (+ ResidualData)); act "
        "'identity' or 'relu' (attribute activation). Inference only (no gradient); made by "
        "the conv_act_fuse pass from conv2d (Bias, ResidualData) + relu.",
)

OPS = [fused_conv2d_add_act]
