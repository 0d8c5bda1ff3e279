"""The control plugin as a whole: which ops it registers, and that each is documented."""
import pytest

from headrace.testing import definition_problems, op_definitions
from headrace.testing.plugin_dists import first_party_plugin

PACKAGE = "headrace_control.ops"
PLUGIN = first_party_plugin("control")  # "headrace:control" where installed whole
EXPECTED = [
    "conditional_block", "increment", "lod_array_length", "read_from_array", "while",
    "write_to_array",
    "conditional_block_grad", "read_from_array_grad", "while_grad", "write_to_array_grad",
    "split_lod_tensor", "merge_lod_tensor",
    "lod_rank_table", "max_sequence_len", "reorder_lod_tensor_by_rank",
    "reorder_lod_tensor_by_rank_grad",
    "lod_tensor_to_array", "array_to_lod_tensor", "shrink_rnn_memory", "shrink_rnn_memory_grad",
    "select_input", "select_output", "select_input_grad",
    "tensor_array_to_tensor", "tensor_array_to_tensor_grad",
]
OPDEFS = op_definitions(PACKAGE)


def test_the_ops_of_the_family():
    assert sorted(d.type for d in OPDEFS) == sorted(EXPECTED)


@pytest.mark.parametrize("opdef", OPDEFS, ids=lambda d: d.type)
def test_registered_and_documented(opdef):
    assert not definition_problems(opdef, PLUGIN, PACKAGE)
