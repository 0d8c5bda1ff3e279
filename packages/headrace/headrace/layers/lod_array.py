"""Batches of sequences as time steps, Fluid's building blocks of DynamicRNN: rank tables,
LoD tensors to and from tensor arrays, shrinking a memory to the running sequences, and a
tensor array joined into one tensor."""
from ..checks import check_bool, check_int, check_variable
from ..errors import LayerError
from ..framework import Variable
from ..layer_helper import LayerHelper

__all__ = ["lod_rank_table", "max_sequence_len", "lod_tensor_to_array", "array_to_lod_tensor",
           "shrink_memory", "reorder_lod_tensor_by_rank", "tensor_array_to_tensor"]


def _expect_kind(fn, name, var, kind):
    if not isinstance(var, Variable) or var.kind != kind:
        raise LayerError(f"{fn}: argument '{name}' must be a {kind} Variable, got {var!r}"[:300])
    return var


def lod_rank_table(x, level=0):
    """The sequences of ``x``'s LoD level ``level`` ranked by length, longest first (a
    ``lod_rank_table`` variable)."""
    helper = LayerHelper("lod_rank_table")
    check_variable("lod_rank_table", "x", x)
    table = helper.create_variable(name=f"{helper.name}.out", type="lod_rank_table")
    helper.append_op("lod_rank_table", {"X": x}, {"Out": table},
                     {"level": check_int("lod_rank_table", "level", level, minimum=0)})
    return table


def max_sequence_len(rank_table):
    """The length of the longest sequence of a rank table: an int64 [1] Variable."""
    helper = LayerHelper("max_sequence_len")
    _expect_kind("max_sequence_len", "rank_table", rank_table, "lod_rank_table")
    out = helper.create_variable_for_type_inference("int64", stop_gradient=True)
    helper.append_op("max_sequence_len", {"RankTable": rank_table}, {"Out": out})
    return out


def lod_tensor_to_array(x, table):
    """The time steps of ``x``'s sequences in rank order: step t holds item t of every
    sequence longer than t (a tensor array)."""
    helper = LayerHelper("lod_tensor_to_array")
    check_variable("lod_tensor_to_array", "x", x)
    _expect_kind("lod_tensor_to_array", "table", table, "lod_rank_table")
    array = helper.create_variable(name=f"{helper.name}.out", type="lod_tensor_array",
                                   dtype=x.dtype)
    helper.append_op("lod_tensor_to_array", {"X": x, "RankTable": table}, {"Out": array})
    return array


def array_to_lod_tensor(x, table):
    """The inverse of :func:`lod_tensor_to_array`: the sequences in their original order."""
    helper = LayerHelper("array_to_lod_tensor")
    _expect_kind("array_to_lod_tensor", "x", x, "lod_tensor_array")
    _expect_kind("array_to_lod_tensor", "table", table, "lod_rank_table")
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("array_to_lod_tensor", {"X": x, "RankTable": table}, {"Out": out})
    return out


def shrink_memory(x, i, table):
    """The first rows of ``x``: one per sequence longer than step ``i`` (an RNN's memory
    at that step; ``shrink_rnn_memory``)."""
    helper = LayerHelper("shrink_memory")
    check_variable("shrink_memory", "x", x)
    check_variable("shrink_memory", "i", i, ("int64",))
    _expect_kind("shrink_memory", "table", table, "lod_rank_table")
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("shrink_rnn_memory", {"X": x, "RankTable": table, "I": i}, {"Out": out})
    return out


def reorder_lod_tensor_by_rank(x, rank_table):
    """``x``'s sequences (or rows) in the order of ``rank_table``."""
    helper = LayerHelper("reorder_lod_tensor_by_rank")
    check_variable("reorder_lod_tensor_by_rank", "x", x)
    _expect_kind("reorder_lod_tensor_by_rank", "rank_table", rank_table, "lod_rank_table")
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("reorder_lod_tensor_by_rank", {"X": x, "RankTable": rank_table},
                     {"Out": out})
    return out


def tensor_array_to_tensor(input, axis=1, use_stack=False, name=None):
    """The elements of a tensor array concatenated along ``axis`` (or stacked on a new axis
    with ``use_stack``); returns ``(out, index)``, index holding each element's size along
    the axis (Fluid's defaults: axis 1, concatenation)."""
    helper = LayerHelper("tensor_array_to_tensor", name=name)
    _expect_kind("tensor_array_to_tensor", "input", input, "lod_tensor_array")
    out = helper.create_variable_for_type_inference(input.dtype)
    index = helper.create_variable_for_type_inference("int32", stop_gradient=True)
    helper.append_op("tensor_array_to_tensor", {"X": input}, {"Out": out, "OutIndex": index},
                     {"axis": check_int("tensor_array_to_tensor", "axis", axis),
                      "use_stack": check_bool("tensor_array_to_tensor", "use_stack",
                                              use_stack)})
    return out, index
