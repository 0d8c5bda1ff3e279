"""Plugin-wide checks of the nn op definitions, and the window arithmetic they share."""
import pytest

from headrace.ops import default_registry
from headrace.testing.plugin_dists import first_party_plugin
from headrace_nn.ops import _common

NN_OPS = {
    "sequence_conv",
    "softmax", "cross_entropy", "cross_entropy2", "softmax_with_cross_entropy", "accuracy",
    "top_k", "conv2d", "pool2d", "batch_norm", "dropout", "lookup_table", "lookup_table_v2",
    "sequence_pool", "lstm", "gru", "layer_norm", "sequence_reverse", "sequence_softmax",
    "sequence_mask", "sequence_expand", "sequence_pad", "sequence_unpad", "sequence_expand_as",
    "norm", "group_norm", "instance_norm", "lstm_unit", "gru_unit", "sequence_slice", "lstmp",
    "rnn",
    "sequence_concat", "sequence_reshape", "sequence_enumerate", "sequence_scatter",
    "fused_conv2d_add_act",
}
# Their gradient ops (Paddle's names: cross_entropy2's is cross_entropy_grad2).
GRAD_OPS = {
    "sequence_conv_grad",
    "softmax_grad", "cross_entropy_grad", "cross_entropy_grad2",
    "softmax_with_cross_entropy_grad", "conv2d_grad", "pool2d_grad", "batch_norm_grad",
    "dropout_grad", "lookup_table_grad", "lookup_table_v2_grad", "sequence_pool_grad",
    "lstm_grad", "gru_grad", "layer_norm_grad", "sequence_softmax_grad", "sequence_expand_grad",
    "sequence_pad_grad", "sequence_unpad_grad", "sequence_expand_as_grad", "norm_grad",
    "group_norm_grad", "instance_norm_grad", "lstm_unit_grad", "gru_unit_grad", "lstmp_grad",
    "sequence_slice_grad", "rnn_grad",
    "sequence_concat_grad", "sequence_reshape_grad", "sequence_scatter_grad",
}
# op-conventions.md: "Ops with no gradient: ... top_k, accuracy ..."
NO_GRADIENT = {"accuracy", "top_k", "sequence_mask", "sequence_enumerate",
               "fused_conv2d_add_act"}   # an inference op, as Paddle's
# op-conventions.md: "int." outputs, kept for the backward pass.
INTERMEDIATE = {
    "cross_entropy2": {"XShape", "MatchX"},
    "softmax_with_cross_entropy": {"Softmax"},
    "batch_norm": {"SavedMean", "SavedVariance", "ReserveSpace"},
    "dropout": {"Mask"},
    "sequence_pool": {"MaxIndex"},
    "lstm": {"BatchGate", "BatchCellPreAct"},
    "lstmp": {"BatchGate", "BatchCellPreAct", "BatchHidden"},
    "gru": {"BatchGate", "BatchResetHiddenPrev", "BatchHidden"},
    "layer_norm": {"Mean", "Variance"},
    "norm": {"Norm"},
    "group_norm": {"Mean", "Variance"},
    "instance_norm": {"SavedMean", "SavedVariance"},
    "gru_unit": {"Gate", "ResetHiddenPrev"},
    "rnn": {"Reserve"},
}


@pytest.fixture(scope="module")
def registry():
    return default_registry()


def test_the_plugin_registers_every_nn_op(registry):
    assert first_party_plugin("nn") in registry.plugins
    mine = set(registry.ops_of(first_party_plugin("nn")))
    assert mine == NN_OPS | GRAD_OPS


@pytest.mark.parametrize("op_type", sorted(NN_OPS | GRAD_OPS))
def test_definition_is_documented_and_flagged(registry, op_type):
    opdef = registry.get(op_type)
    assert opdef.doc and opdef.infer is not None and not opdef.no_kernel
    assert all(s.doc for s in opdef.inputs + opdef.outputs)
    assert all(a.doc for a in opdef.attrs.values())
    assert opdef.differentiable == (op_type not in NO_GRADIENT | GRAD_OPS)
    assert {s.name for s in opdef.outputs if s.intermediate} == INTERMEDIATE.get(op_type, set())


@pytest.mark.parametrize("op_type", sorted(GRAD_OPS))
def test_grad_ops_write_optional_gradients_only(registry, op_type):
    # Each output is bound only when that gradient is wanted.
    opdef = registry.get(op_type)
    assert opdef.outputs and all(s.optional and s.name.endswith("@GRAD") for s in opdef.outputs)


@pytest.mark.parametrize("paddings, algorithm, expected", [
    ([1, 2], "EXPLICIT", [1, 1, 2, 2]),
    ([1, 2, 3, 4], "EXPLICIT", [1, 2, 3, 4]),
    ([1, 2, 3, 4], "VALID", [0, 0, 0, 0]),
    # H: out = ceil(7/2) = 4 needs (4-1)*2 + 3 - 7 = 2 pads; W: out = ceil(8/3) = 3 needs
    # (3-1)*3 + 5 - 8 = 3, the odd one after (Paddle, like TensorFlow).
    ([5, 5], "SAME", [1, 1, 1, 2]),
])
def test_resolve_paddings(paddings, algorithm, expected):
    assert _common.resolve_paddings(paddings, algorithm, [7, 8], [2, 3], [3, 5]) == expected


def test_same_padding_of_an_unknown_dim_is_unknown():
    assert _common.resolve_paddings([0, 0], "SAME", [-1, 4], [1, 1], [3, 3]) == [-1, -1, 1, 1]


@pytest.mark.parametrize("fn, args", [
    (_common.conv_out_size, (-1, 3, 1, 0, 0, 1)),
    (_common.conv_out_size, (8, -1, 1, 0, 0, 1)),
    (_common.pool_out_size, (-1, 2, 0, 0, 2, True)),
])
def test_window_sizes_of_unknown_dims_are_unknown(fn, args):
    assert fn(*args) == -1
