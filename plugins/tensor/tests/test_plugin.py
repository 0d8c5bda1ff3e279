"""The tensor plugin as a whole: which ops it registers, and that each is documented."""
import pytest

from headrace.testing import definition_problems, op_definitions
from headrace.testing.plugin_dists import first_party_plugin

PACKAGE = "headrace_tensor.ops"
PLUGIN = first_party_plugin("tensor")  # "headrace:tensor" where installed whole
# (feed, fetch, fill_constant, fill_zeros_like and assign are the core's: headrace.core_ops)
EXPECTED = [
    "assign_value", "cast", "concat", "fill_constant_batch_size_like", "flatten_contiguous_range",
    "gaussian_random", "lod_reset",
    "reshape2", "split", "transpose2", "uniform_random", "unstack",
    "arg_max", "arg_min", "gather", "gather_nd", "one_hot_v2", "scatter", "where",
    # grad ops (the other differentiable ops' gradients are made of forward ops)
    "concat_grad", "flatten_contiguous_range_grad", "reshape2_grad", "transpose2_grad",
    "unstack_grad",
    "slice", "strided_slice", "slice_grad", "strided_slice_grad", "stack", "stack_grad", "shape",
    "squeeze2", "unsqueeze2", "squeeze2_grad", "unsqueeze2_grad",
    "gather_grad", "gather_nd_grad", "scatter_grad", "where_grad",
    "expand_v2", "expand_as_v2", "expand", "expand_v2_grad", "expand_as_v2_grad", "expand_grad",
    "pad", "pad_grad", "label_smooth", "label_smooth_grad",
]
OPDEFS = op_definitions(PACKAGE)


def test_the_ops_of_the_family():
    assert sorted(d.type for d in OPDEFS) == sorted(EXPECTED)


@pytest.mark.parametrize("opdef", OPDEFS, ids=lambda d: d.type)
def test_registered_and_documented(opdef):
    assert not definition_problems(opdef, PLUGIN, PACKAGE)
