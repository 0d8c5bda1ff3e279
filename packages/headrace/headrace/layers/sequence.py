"""Layers over LoD sequence batches: pooling (sequence_pool and its first/last steps),
reversing, a softmax within each sequence, masks from lengths, and expanding rows by another
batch's sequences; a convolution over the time steps of each sequence (sequence_conv);
joining, reshaping, enumerating windows of and scattering into sequences."""
from ..checks import check_bool, check_choice, check_int, check_number, check_variable
from ..errors import LayerError
from ..framework import Variable
from ..framework.builder import dtype_enum
from ..layer_helper import LayerHelper

__all__ = ["sequence_pool", "sequence_first_step", "sequence_last_step", "sequence_reverse",
           "sequence_softmax", "sequence_mask", "sequence_expand", "sequence_expand_as",
           "sequence_pad", "sequence_unpad", "sequence_slice", "lod_reset", "lod_append",
           "sequence_conv", "sequence_concat", "sequence_reshape", "sequence_enumerate",
           "sequence_scatter"]


def sequence_reverse(x, name=None):
    """Each sequence of ``x`` (its last LoD level) with its rows in reverse order, LoD kept
    (the backward direction of a bidirectional RNN)."""
    helper = LayerHelper("sequence_reverse", name=name)
    check_variable("sequence_reverse", "x", x)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("sequence_reverse", {"X": x}, {"Y": out})
    return out


def sequence_softmax(input, use_cudnn=False, name=None):
    """A softmax over the rows of each sequence of ``input`` (one score per row: [rows, 1])."""
    helper = LayerHelper("sequence_softmax", name=name)
    check_variable("sequence_softmax", "input", input, ("float32", "float64"))
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("sequence_softmax", {"X": input}, {"Out": out})
    return out


def sequence_pool(input, pool_type, is_test=False, pad_value=0.0):
    """One row per sequence of ``input`` (its last LoD level): ``pool_type`` "average",
    "sum", "sqrt" (sum / sqrt(length)), "max", "last" or "first"; an empty sequence gives
    ``pad_value``. The result has one LoD level less."""
    helper = LayerHelper("sequence_pool")
    check_variable("sequence_pool", "input", input, ("float32", "float64"))
    kind = check_choice("sequence_pool", "pool_type", str(pool_type).upper(),
                        ("AVERAGE", "SUM", "SQRT", "MAX", "LAST", "FIRST"))
    out = helper.create_variable_for_type_inference(input.dtype)
    index = helper.create_variable_for_type_inference("int32", stop_gradient=True)
    helper.append_op("sequence_pool", {"X": input}, {"Out": out, "MaxIndex": index},
                     {"pooltype": kind, "is_test": check_bool("sequence_pool", "is_test",
                                                              is_test),
                      "pad_value": check_number("sequence_pool", "pad_value", pad_value)})
    return out


def sequence_first_step(input):
    """The first row of each sequence."""
    return sequence_pool(input, "first")


def sequence_last_step(input):
    """The last row of each sequence."""
    return sequence_pool(input, "last")


def sequence_mask(x, maxlen=None, dtype="int64", name=None):
    """The mask of lengths ``x``: ``x.shape + [maxlen]``, 1 where the position is within the
    length (``maxlen``: an int, an int Variable, or None for the largest length)."""
    helper = LayerHelper("sequence_mask", name=name)
    check_variable("sequence_mask", "x", x, ("int32", "int64"))
    inputs, attrs = {"X": x}, {"out_dtype": dtype_enum(dtype)}
    if isinstance(maxlen, Variable):
        inputs["MaxLenTensor"] = maxlen
    else:
        attrs["maxlen"] = -1 if maxlen is None else check_int("sequence_mask", "maxlen",
                                                              maxlen, minimum=1)
    out = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    helper.append_op("sequence_mask", inputs, {"Y": out}, attrs)
    return out


def sequence_expand(x, y, ref_level=-1, name=None):
    """Each row of ``x`` (or each sequence, when ``x`` has LoD) repeated as many times as the
    matching sequence of ``y``'s LoD level ``ref_level`` is long."""
    helper = LayerHelper("sequence_expand", name=name)
    check_variable("sequence_expand", "x", x, ("float32", "float64"))
    check_variable("sequence_expand", "y", y)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("sequence_expand", {"X": x, "Y": y}, {"Out": out},
                     {"ref_level": check_int("sequence_expand", "ref_level", ref_level,
                                             minimum=-1)})
    return out


def sequence_pad(x, pad_value, maxlen=None, name=None):
    """``(padded, lengths)``: the sequences of ``x`` as [sequences, maxlen, ...] (``maxlen``
    None: the longest), filled with ``pad_value`` (a Variable of one value or one row)."""
    helper = LayerHelper("sequence_pad", name=name)
    check_variable("sequence_pad", "x", x, ("float32", "float64"))
    check_variable("sequence_pad", "pad_value", pad_value, ("float32", "float64"))
    out = helper.create_variable_for_type_inference(x.dtype)
    length = helper.create_variable_for_type_inference("int64", stop_gradient=True)
    width = -1 if maxlen is None else check_int("sequence_pad", "maxlen", maxlen, minimum=1)
    helper.append_op("sequence_pad", {"X": x, "PadValue": pad_value},
                     {"Out": out, "Length": length}, {"padded_length": width})
    return out, length


def sequence_unpad(x, length, name=None):
    """The first ``length[s]`` rows of each ``x[s]`` as one LoD batch (the inverse of
    :func:`sequence_pad`)."""
    helper = LayerHelper("sequence_unpad", name=name)
    check_variable("sequence_unpad", "x", x, ("float32", "float64"))
    check_variable("sequence_unpad", "length", length, ("int32", "int64"))
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("sequence_unpad", {"X": x, "Length": length}, {"Out": out})
    return out


def sequence_expand_as(x, y, name=None):
    """Row i of ``x`` repeated over the rows of sequence i of ``y``, with ``y``'s LoD."""
    helper = LayerHelper("sequence_expand_as", name=name)
    check_variable("sequence_expand_as", "x", x, ("float32", "float64"))
    check_variable("sequence_expand_as", "y", y)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("sequence_expand_as", {"X": x, "Y": y}, {"Out": out})
    return out


def _lod_reset(fn, x, y, target_lod, append):
    helper = LayerHelper("lod_reset")
    check_variable(fn, "x", x)
    inputs, attrs = {"X": x}, {"append": append}
    if isinstance(y, Variable):
        inputs["Y"] = y
    elif target_lod is not None:
        attrs["target_lod"] = [check_int(fn, "target_lod", v, minimum=0) for v in target_lod]
    else:
        raise helper.error(f"{fn}: give y (a Variable whose LoD, or data, holds the offsets) "
                           f"or target_lod (offsets)")
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("lod_reset", inputs, {"Out": out}, attrs)
    return out


def lod_reset(x, y=None, target_lod=None):
    """``x``'s data with a new LoD: ``y``'s LoD (or, without one, its data as offsets), or
    the offsets ``target_lod``."""
    return _lod_reset("lod_reset", x, y, target_lod, False)


def lod_append(x, level):
    """``x`` with one more LoD level (``level``: offsets, or a Variable holding them)."""
    if isinstance(level, Variable):
        return _lod_reset("lod_append", x, level, None, True)
    return _lod_reset("lod_append", x, None, list(level), True)


def sequence_slice(input, offset, length, name=None):
    """From each sequence of ``input``, ``length[i]`` rows from row ``offset[i]`` of it
    (``offset``/``length``: int Variables [sequences, 1])."""
    helper = LayerHelper("sequence_slice", name=name)
    check_variable("sequence_slice", "input", input, ("float32", "float64"))
    check_variable("sequence_slice", "offset", offset, ("int32", "int64"))
    check_variable("sequence_slice", "length", length, ("int32", "int64"))
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("sequence_slice", {"X": input, "Offset": offset, "Length": length},
                     {"Out": out})
    return out


def sequence_conv(input, num_filters, filter_size=3, filter_stride=1, padding=True,
                  padding_start=None, bias_attr=None, param_attr=None, act=None, name=None):
    """Fluid's sequence_conv: ``act(sequence_conv(input, W) + b)`` over each sequence of
    ``input`` [T, D] (one LoD level), W [filter_size * D, num_filters], b [num_filters]
    (``elementwise_add`` at axis 1; ``bias_attr=False`` drops it).

    Row t of a sequence sees its rows t + padding_start .. t + padding_start + filter_size - 1,
    zeros outside it; padding_start defaults to -(filter_size // 2), Fluid's choice (a window
    centred on the row for odd sizes). ``padding`` is accepted and unused, as in Fluid (the
    layer never trains the padding; the op's paddingTrainable does). filter_stride must be 1.
    """
    helper = LayerHelper("sequence_conv", param_attr=param_attr, bias_attr=bias_attr, act=act,
                         name=name)
    check_variable("sequence_conv", "input", input, ("float32", "float64"))
    num_filters = check_int("sequence_conv", "num_filters", num_filters, minimum=1)
    filter_size = check_int("sequence_conv", "filter_size", filter_size, minimum=1)
    filter_stride = check_int("sequence_conv", "filter_stride", filter_stride, minimum=1)
    check_bool("sequence_conv", "padding", padding)
    if padding_start is None:
        padding_start = -(filter_size // 2)
    padding_start = check_int("sequence_conv", "padding_start", padding_start)
    if len(input.shape) != 2 or input.shape[1] < 0:
        raise helper.error(f"argument 'input' ({input.name}) must be [T, D] with D known, got "
                           f"shape {list(input.shape)}")
    w = helper.create_parameter(helper.param_attr, [filter_size * input.shape[1], num_filters],
                                input.dtype)
    pre_bias = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("sequence_conv", {"X": input, "Filter": w}, {"Out": pre_bias},
                     {"contextStride": filter_stride, "contextStart": padding_start,
                      "contextLength": filter_size})
    out = helper.append_activation(helper.append_bias_op(pre_bias, dim_start=1))
    out.param, out.params, out.bias = w, [w], helper.bias
    return out


def sequence_concat(input, name=None):
    """Sequence i of the result is sequence i of each Variable of ``input`` (a list of two or
    more batches with as many sequences, one LoD level each) joined in list order."""
    helper = LayerHelper("sequence_concat", name=name)
    if not isinstance(input, (list, tuple)) or len(input) < 2:
        raise LayerError(f"sequence_concat: argument 'input' must be a list of two or more "
                         f"Variables, got {input!r}"[:300])
    for i, x in enumerate(input):
        check_variable("sequence_concat", f"input[{i}]", x, ("int64", "float32", "float64"))
    out = helper.create_variable_for_type_inference(input[0].dtype)
    helper.append_op("sequence_concat", {"X": list(input)}, {"Out": out})
    return out


def sequence_reshape(input, new_dim):
    """``input`` (2-D, one LoD level) with its data regrouped into rows of ``new_dim`` values;
    each sequence's length * width must divide by ``new_dim``."""
    helper = LayerHelper("sequence_reshape")
    check_variable("sequence_reshape", "input", input, ("int32", "int64", "float32", "float64"))
    new_dim = check_int("sequence_reshape", "new_dim", new_dim, minimum=1)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("sequence_reshape", {"X": input}, {"Out": out}, {"new_dim": new_dim})
    return out


def sequence_enumerate(input, win_size, pad_value=0, name=None):
    """For each id of the id sequences ``input`` ([rows, 1], int32/int64), the ``win_size``
    ids from it on within its sequence, ``pad_value`` past the sequence's end: [rows,
    win_size]."""
    helper = LayerHelper("sequence_enumerate", name=name)
    check_variable("sequence_enumerate", "input", input, ("int32", "int64"))
    win_size = check_int("sequence_enumerate", "win_size", win_size, minimum=2)
    pad_value = check_int("sequence_enumerate", "pad_value", pad_value)
    out = helper.create_variable_for_type_inference(input.dtype, stop_gradient=True)
    helper.append_op("sequence_enumerate", {"X": input}, {"Out": out},
                     {"win_size": win_size, "pad_value": pad_value})
    return out


def sequence_scatter(input, index, updates, name=None):
    """``input`` with, for each sequence i of ``index``/``updates`` (one LoD level, shared),
    the updates added at the columns ``index`` of row i (row i flattened)."""
    helper = LayerHelper("sequence_scatter", name=name)
    dtypes = ("int32", "int64", "float32", "float64")
    check_variable("sequence_scatter", "input", input, dtypes)
    check_variable("sequence_scatter", "index", index, ("int32", "int64"))
    check_variable("sequence_scatter", "updates", updates, dtypes)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("sequence_scatter", {"X": input, "Ids": index, "Updates": updates},
                     {"Out": out})
    return out
