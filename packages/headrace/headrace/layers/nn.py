"""Neural-network layers with parameters: fc, embedding, conv2d, batch_norm; and pool2d,
dropout, softmax.

Layers with parameters return a Variable carrying them: ``out.param`` (the weight, filter,
table or scale Parameter) and ``out.bias`` (the bias Parameter or None), so that
``exe.run(fetch_list=[h.param, h.param.grad])`` shows a layer's weight and its gradient.
"""
import math

import numpy as np

from ..checks import check_bool, check_choice, check_int, check_ints, check_number, check_variable
from ..initializer import Constant, Normal
from ..layer_helper import LayerHelper
from ..param_attr import ParamAttr

__all__ = ["fc", "embedding", "conv2d", "pool2d", "batch_norm", "dropout", "softmax",
           "dynamic_lstm", "dynamic_lstmp", "dynamic_gru", "layer_norm", "l2_normalize",
           "group_norm", "instance_norm"]


def _attach(out, params, bias):
    out.param = params[0] if len(params) == 1 else list(params)
    out.params = list(params)
    out.bias = bias
    return out


def fc(input, size, num_flatten_dims=1, param_attr=None, bias_attr=None, act=None, name=None):
    """A fully connected layer: ``act(sum_i mul(input_i, w_i) + b)``.

    input: a Variable or a list of them (each gets its own weight; the products are summed).
    Each input is flattened to a matrix at ``num_flatten_dims``: the leading dims stay, the
    rest form the rows of the weight [prod(dims[num_flatten_dims:]), size]. The result has shape
    input.dims[:num_flatten_dims] + [size]. ``bias_attr=False`` drops the bias.
    """
    helper = LayerHelper("fc", input=input, param_attr=param_attr, bias_attr=bias_attr, act=act,
                          name=name)
    size = check_int("fc", "size", size, minimum=1)
    num_flatten_dims = check_int("fc", "num_flatten_dims", num_flatten_dims, minimum=1)
    dtype = helper.input_dtype()
    products, weights = [], []
    for var, attr in helper.iter_inputs_and_params():
        shape = list(var.shape)
        if num_flatten_dims >= len(shape):
            raise helper.error(f"argument 'num_flatten_dims' ({num_flatten_dims}) must be "
                               f"less than the rank of input '{var.name}' (shape {shape})")
        rest = shape[num_flatten_dims:]
        if any(d < 0 for d in rest):
            raise helper.error(f"input '{var.name}' (shape {shape}) needs known dims after "
                               f"num_flatten_dims={num_flatten_dims} to size the weight")
        w = helper.create_parameter(attr, [math.prod(rest), size], dtype)   # dims known: ints
        tmp = helper.create_variable_for_type_inference(dtype)
        helper.append_op("mul", {"X": var, "Y": w}, {"Out": tmp},
                         {"x_num_col_dims": num_flatten_dims, "y_num_col_dims": 1})
        products.append(tmp)
        weights.append(w)
    if len(products) == 1:
        pre_bias = products[0]
    else:
        pre_bias = helper.create_variable_for_type_inference(dtype)
        helper.append_op("sum", {"X": products}, {"Out": pre_bias})
    pre_act = helper.append_bias_op(pre_bias, dim_start=num_flatten_dims)
    return _attach(helper.append_activation(pre_act), weights, helper.bias)


def embedding(input, size, is_sparse=False, is_distributed=False, padding_idx=None,
              param_attr=None, dtype="float32"):
    """Rows of a [vocab, dim] table for int64 ids of shape [..., 1] (``lookup_table``).

    padding_idx: an id whose rows come out as zeros (negative counts from the vocabulary end).
    is_sparse: the table's gradient is a selected_rows (only the looked-up rows).
    """
    helper = LayerHelper("embedding", param_attr=param_attr)
    check_variable("embedding", "input", input, ("int64", "int32"))
    if not isinstance(size, (list, tuple)) or len(size) != 2:
        raise helper.error(f"argument 'size' must be [vocab_size, embedding_dim], got {size!r}")
    size = [check_int("embedding", "size", s, minimum=1) for s in size]
    if padding_idx is None:
        padding_idx = -1
    else:
        padding_idx = check_int("embedding", "padding_idx", padding_idx, -size[0], size[0] - 1)
        padding_idx = padding_idx + size[0] if padding_idx < 0 else padding_idx
    w = helper.create_parameter(helper.param_attr, size, dtype)
    out = helper.create_variable_for_type_inference(w.dtype)
    helper.append_op("lookup_table", {"W": w, "Ids": input}, {"Out": out},
                     {"is_sparse": check_bool("embedding", "is_sparse", is_sparse),
                      "is_distributed": check_bool("embedding", "is_distributed",
                                                   is_distributed),
                      "padding_idx": padding_idx})
    return _attach(out, [w], None)


def _padding(fn, padding, n=2):
    """(paddings attr, padding_algorithm) from an int, a list of 2 or 4, 'SAME' or 'VALID'."""
    if isinstance(padding, str):
        algo = check_choice(fn, "padding", padding.upper(), ("SAME", "VALID"))
        return [0] * n, algo
    if isinstance(padding, (list, tuple)) and len(padding) == 2 * n:
        return [check_int(fn, "padding", p, minimum=0) for p in padding], "EXPLICIT"
    return check_ints(fn, "padding", padding, n, minimum=0), "EXPLICIT"


def conv2d(input, num_filters, filter_size, stride=1, padding=0, dilation=1, groups=None,
           param_attr=None, bias_attr=None, use_cudnn=True, act=None, name=None,
           data_format="NCHW"):
    """2-D convolution of an NCHW input with [num_filters, C/groups, kh, kw] filters, plus a
    per-channel bias (``elementwise_add`` at axis 1) and ``act``.

    filter_size, stride, dilation: an int or a pair. padding: an int, a pair, [top, bottom,
    left, right], 'SAME' or 'VALID'. The default filter initializer is Normal(0, sqrt(2 / (C *
    kh * kw))).
    """
    helper = LayerHelper("conv2d", param_attr=param_attr, bias_attr=bias_attr, act=act,
                          name=name)
    check_variable("conv2d", "input", input)
    check_choice("conv2d", "data_format", data_format, ("NCHW", "NHWC"))
    if len(input.shape) != 4:
        raise helper.error(f"argument 'input' must be 4-D ({data_format}), got shape "
                           f"{list(input.shape)}")
    channels = input.shape[1 if data_format == "NCHW" else 3]
    if channels < 0:
        raise helper.error(f"the channel dim of input '{input.name}' must be known, got shape "
                           f"{list(input.shape)}")
    num_filters = check_int("conv2d", "num_filters", num_filters, minimum=1)
    groups = 1 if groups is None else check_int("conv2d", "groups", groups, minimum=1)
    if channels % groups or num_filters % groups:
        raise helper.error(f"argument 'groups' ({groups}) must divide the input channels "
                           f"({channels}) and num_filters ({num_filters})")
    filter_size = check_ints("conv2d", "filter_size", filter_size, 2, minimum=1)
    stride = check_ints("conv2d", "stride", stride, 2, minimum=1)
    dilation = check_ints("conv2d", "dilation", dilation, 2, minimum=1)
    paddings, algorithm = _padding("conv2d", padding)
    fan_in = filter_size[0] * filter_size[1] * channels
    w = helper.create_parameter(helper.param_attr,
                                [num_filters, channels // groups] + filter_size, input.dtype,
                                default_initializer=Normal(0.0, math.sqrt(2.0 / fan_in)))
    pre_bias = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("conv2d", {"Input": input, "Filter": w}, {"Output": pre_bias},
                     {"strides": stride, "paddings": paddings, "dilations": dilation,
                      "groups": groups, "data_format": data_format,
                      "padding_algorithm": algorithm})
    if data_format == "NCHW":
        pre_act = helper.append_bias_op(pre_bias, dim_start=1, dim_end=2)
    else:
        pre_act = helper.append_bias_op(pre_bias, dim_start=3, dim_end=4)
    return _attach(helper.append_activation(pre_act), [w], helper.bias)


def pool2d(input, pool_size=-1, pool_type="max", pool_stride=1, pool_padding=0,
           global_pooling=False, use_cudnn=True, ceil_mode=False, name=None, exclusive=True,
           data_format="NCHW"):
    """Max or average pooling of an NCHW input over pool_size windows (``pool2d``).

    pool_size, pool_stride: an int or a pair; pool_padding as conv2d's padding.
    global_pooling pools each whole feature map. exclusive: average over real elements only.
    """
    helper = LayerHelper("pool2d", name=name)
    check_variable("pool2d", "input", input)
    check_choice("pool2d", "pool_type", pool_type, ("max", "avg"))
    check_choice("pool2d", "data_format", data_format, ("NCHW", "NHWC"))
    global_pooling = check_bool("pool2d", "global_pooling", global_pooling)
    if len(input.shape) != 4:
        raise helper.error(f"argument 'input' must be 4-D ({data_format}), got shape "
                           f"{list(input.shape)}")
    if pool_size == -1 and not global_pooling:
        raise helper.error("argument 'pool_size' is required unless global_pooling is True")
    ksize = [1, 1] if pool_size == -1 else check_ints("pool2d", "pool_size", pool_size, 2, 1)
    strides = check_ints("pool2d", "pool_stride", pool_stride, 2, minimum=1)
    paddings, algorithm = _padding("pool2d", pool_padding)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("pool2d", {"X": input}, {"Out": out},
                     {"pooling_type": pool_type, "ksize": ksize, "global_pooling": global_pooling,
                      "strides": strides, "paddings": paddings,
                      "ceil_mode": check_bool("pool2d", "ceil_mode", ceil_mode),
                      "exclusive": check_bool("pool2d", "exclusive", exclusive),
                      "data_format": data_format, "padding_algorithm": algorithm})
    return out


def batch_norm(input, act=None, is_test=False, momentum=0.9, epsilon=1e-5, param_attr=None,
               bias_attr=None, data_layout="NCHW", in_place=False, name=None,
               moving_mean_name=None, moving_variance_name=None, use_global_stats=False):
    """Batch normalization per channel (dim 1 for NCHW, the last for NHWC).

    Parameters: scale (``param_attr``, init 1) and bias (``bias_attr``, init 0); the running
    mean and variance are non-trainable persistable parameters (init 0 and 1) that the op
    updates in place while training (``running = momentum running + (1 - momentum) batch``).
    """
    helper = LayerHelper("batch_norm", param_attr=param_attr, bias_attr=bias_attr, act=act,
                          name=name)
    check_variable("batch_norm", "input", input, ("float16", "float32", "float64"))
    check_choice("batch_norm", "data_layout", data_layout, ("NCHW", "NHWC"))
    if len(input.shape) < 2:
        raise helper.error(f"argument 'input' needs at least 2 dims, got shape "
                           f"{list(input.shape)}")
    channels = input.shape[1] if data_layout == "NCHW" else input.shape[-1]
    if channels < 0:
        raise helper.error(f"the channel dim of input '{input.name}' must be known, got shape "
                           f"{list(input.shape)}")
    momentum = check_number("batch_norm", "momentum", momentum, 0.0, 1.0)
    epsilon = check_number("batch_norm", "epsilon", epsilon, minimum=0.0)
    # Statistics are float32 for float16 inputs, as in Paddle.
    dtype = "float32" if input.dtype == "float16" else input.dtype
    scale = helper.create_parameter(helper.param_attr, [channels], dtype,
                                    default_initializer=Constant(1.0))
    bias = helper.create_parameter(helper.bias_attr, [channels], dtype, is_bias=True)
    if bias is None:
        raise helper.error("argument 'bias_attr' cannot be False: batch_norm needs its bias")
    mean = helper.create_parameter(ParamAttr(name=moving_mean_name, initializer=Constant(0.0),
                                             trainable=False), [channels], dtype)
    variance = helper.create_parameter(ParamAttr(name=moving_variance_name,
                                                 initializer=Constant(1.0), trainable=False),
                                       [channels], dtype)
    mean.stop_gradient = variance.stop_gradient = True
    saved_mean = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    saved_variance = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    out = input if in_place else helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("batch_norm",
                     {"X": input, "Scale": scale, "Bias": bias, "Mean": mean,
                      "Variance": variance},
                     {"Y": out, "MeanOut": mean, "VarianceOut": variance,
                      "SavedMean": saved_mean, "SavedVariance": saved_variance},
                     {"momentum": momentum, "epsilon": epsilon,
                      "is_test": check_bool("batch_norm", "is_test", is_test),
                      "data_layout": data_layout,
                      "use_global_stats": check_bool("batch_norm", "use_global_stats",
                                                     use_global_stats)})
    out = helper.append_activation(out)
    _attach(out, [scale], bias)
    out.moving_mean, out.moving_variance = mean, variance
    return out


def dropout(x, dropout_prob, is_test=False, seed=None, name=None,
            dropout_implementation="downgrade_in_infer"):
    """Zero each element with probability ``dropout_prob`` while training.

    downgrade_in_infer: training keeps x, testing multiplies by (1 - p). upscale_in_train:
    training divides the kept elements by (1 - p), testing passes x. ``seed`` fixes the mask.
    """
    helper = LayerHelper("dropout", name=name)
    check_variable("dropout", "x", x)
    dropout_prob = check_number("dropout", "dropout_prob", dropout_prob, 0.0, 1.0)
    check_choice("dropout", "dropout_implementation", dropout_implementation,
                 ("downgrade_in_infer", "upscale_in_train"))
    if seed is not None:
        seed = check_int("dropout", "seed", seed, minimum=0, maximum=2**31 - 1)
    out = helper.create_variable_for_type_inference(x.dtype)
    mask = helper.create_variable_for_type_inference("uint8", stop_gradient=True)
    helper.append_op("dropout", {"X": x}, {"Out": out, "Mask": mask},
                     {"dropout_prob": dropout_prob,
                      "is_test": check_bool("dropout", "is_test", is_test),
                      "fix_seed": seed is not None, "seed": seed or 0,
                      "dropout_implementation": dropout_implementation})
    return out


def softmax(input, use_cudnn=False, name=None, axis=-1):
    """exp(x) / sum(exp(x)) along ``axis`` (numerically stable)."""
    helper = LayerHelper("softmax", name=name)
    check_variable("softmax", "input", input)
    rank = len(input.shape)
    axis = check_int("softmax", "axis", axis, minimum=-max(rank, 1), maximum=max(rank - 1, 0))
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("softmax", {"X": input}, {"Out": out}, {"axis": axis})
    return out


def dynamic_lstm(input, size, h_0=None, c_0=None, param_attr=None, bias_attr=None,
                 use_peepholes=True, is_reverse=False, gate_activation="sigmoid",
                 cell_activation="tanh", candidate_activation="tanh", dtype="float32",
                 name=None):
    """Fluid's dynamic_lstm: an LSTM over the sequences of ``input`` (LoD rows of
    ``size`` = 4 * hidden columns: the gates' input projections, say an fc's output, in the
    layout [candidate, input, forget, output]). Returns ``(hidden, cell)``, each [rows,
    hidden] with input's LoD. The recurrent weight is [hidden, 4 * hidden]; the bias [1, 4 *
    hidden], or [1, 7 * hidden] with the peephole weights. The time loop runs in one kernel.
    """
    helper = LayerHelper("lstm", param_attr=param_attr, bias_attr=bias_attr, name=name)
    check_variable("dynamic_lstm", "input", input, ("float32", "float64"))
    size = check_int("dynamic_lstm", "size", size, minimum=4)
    if size % 4:
        raise helper.error(f"argument 'size' must be 4 * hidden (the four gates), got {size}")
    d = size // 4
    dtype = input.dtype
    if (h_0 is None) != (c_0 is None):
        raise helper.error("h_0 and c_0 are given together or not at all")
    weight = helper.create_parameter(helper.param_attr, [d, 4 * d], dtype)
    bias = helper.create_parameter(helper.bias_attr, [1, (7 if use_peepholes else 4) * d],
                                   dtype, is_bias=True)
    outs = {k: helper.create_variable_for_type_inference(dtype)
            for k in ("Hidden", "Cell", "BatchGate", "BatchCellPreAct")}
    inputs = {"Input": input, "Weight": weight, "Bias": bias}
    if h_0 is not None:
        inputs.update(H0=h_0, C0=c_0)
    helper.append_op("lstm", inputs, outs,
                     {"use_peepholes": check_bool("dynamic_lstm", "use_peepholes",
                                                  use_peepholes),
                      "is_reverse": check_bool("dynamic_lstm", "is_reverse", is_reverse),
                      "gate_activation": gate_activation, "cell_activation": cell_activation,
                      "candidate_activation": candidate_activation})
    return outs["Hidden"], outs["Cell"]


def dynamic_lstmp(input, size, proj_size, param_attr=None, bias_attr=None, use_peepholes=True,
                  is_reverse=False, gate_activation="sigmoid", cell_activation="tanh",
                  candidate_activation="tanh", proj_activation="tanh", dtype="float32",
                  name=None, h_0=None, c_0=None, cell_clip=None, proj_clip=None):
    """Fluid's dynamic_lstmp: an LSTM with a recurrent projection r = act(h W_rh), [rows,
    ``proj_size``], fed back in place of h. ``input`` as dynamic_lstm's (``size`` = 4 *
    hidden). Returns ``(projection, cell)`` with input's LoD. Parameters: the recurrent weight
    [proj_size, 4 * hidden] and the projection weight [hidden, proj_size], both from
    ``param_attr`` as in Fluid (a list of two attributes names them apart); the bias as
    dynamic_lstm's. ``h_0`` [sequences, proj_size] needs ``c_0`` [sequences, hidden]; ``c_0``
    may come alone. ``cell_clip``/``proj_clip`` (None: none) bound c and r. As Paddle's kernel,
    any ``proj_activation`` but 'identity' applies ``cell_activation`` to the projection."""
    helper = LayerHelper("lstmp", param_attr=param_attr, bias_attr=bias_attr, name=name)
    check_variable("dynamic_lstmp", "input", input, ("float32", "float64"))
    size = check_int("dynamic_lstmp", "size", size, minimum=4)
    if size % 4:
        raise helper.error(f"argument 'size' must be 4 * hidden (the four gates), got {size}")
    proj_size = check_int("dynamic_lstmp", "proj_size", proj_size, minimum=1)
    if bias_attr is False:
        raise helper.error("bias_attr cannot be False: the op needs its Bias")
    if h_0 is not None and c_0 is None:
        raise helper.error("h_0 needs c_0 (c_0 may come alone)")
    clips = {k: 0.0 if v is None else check_number("dynamic_lstmp", k, v, minimum=0)
             for k, v in (("cell_clip", cell_clip), ("proj_clip", proj_clip))}
    attrs = list(param_attr) if isinstance(param_attr, (list, tuple)) else [param_attr] * 2
    if len(attrs) != 2:
        raise helper.error(f"param_attr must be one attribute or a list of two (weight, "
                           f"projection weight), got {len(attrs)}")
    if attrs[0] is attrs[1] and ParamAttr._to_attr(attrs[0]).name is not None:
        raise helper.error("a named param_attr would name both weights alike: pass a list of "
                           "two (weight, projection weight)")
    d, dtype = size // 4, input.dtype
    weight = helper.create_parameter(attrs[0], [proj_size, 4 * d], dtype)
    proj_weight = helper.create_parameter(attrs[1], [d, proj_size], dtype)
    bias = helper.create_parameter(helper.bias_attr, [1, (7 if use_peepholes else 4) * d],
                                   dtype, is_bias=True)
    outs = {k: helper.create_variable_for_type_inference(dtype)
            for k in ("Projection", "Cell", "BatchGate", "BatchCellPreAct", "BatchHidden")}
    inputs = {"Input": input, "Weight": weight, "ProjWeight": proj_weight, "Bias": bias}
    if h_0 is not None:
        inputs["H0"] = h_0
    if c_0 is not None:
        inputs["C0"] = c_0
    helper.append_op("lstmp", inputs, outs,
                     {"use_peepholes": check_bool("dynamic_lstmp", "use_peepholes",
                                                  use_peepholes),
                      "is_reverse": check_bool("dynamic_lstmp", "is_reverse", is_reverse),
                      "gate_activation": gate_activation, "cell_activation": cell_activation,
                      "candidate_activation": candidate_activation,
                      "proj_activation": proj_activation, **clips})
    return outs["Projection"], outs["Cell"]


def dynamic_gru(input, size, param_attr=None, bias_attr=None, is_reverse=False,
                gate_activation="sigmoid", candidate_activation="tanh", h_0=None,
                origin_mode=False):
    """Fluid's dynamic_gru: a GRU over the sequences of ``input`` (LoD rows of 3 * ``size``
    columns: the input projections of the [update, reset, candidate] gates). Returns the hidden
    states, [rows, size] with input's LoD. The reset gate applies before the candidate's
    product, (r * h) W_c. The time loop runs in one kernel."""
    helper = LayerHelper("gru", param_attr=param_attr, bias_attr=bias_attr)
    check_variable("dynamic_gru", "input", input, ("float32", "float64"))
    d = check_int("dynamic_gru", "size", size, minimum=1)
    if input.shape and input.shape[-1] not in (-1, 3 * d):
        raise helper.error(f"input must have 3 * size = {3 * d} columns (the gates' input "
                           f"projections), found {list(input.shape)}")
    dtype = input.dtype
    weight = helper.create_parameter(helper.param_attr, [d, 3 * d], dtype)
    bias = helper.create_parameter(helper.bias_attr, [1, 3 * d], dtype, is_bias=True)
    outs = {k: helper.create_variable_for_type_inference(dtype)
            for k in ("BatchGate", "BatchResetHiddenPrev", "BatchHidden", "Hidden")}
    inputs = {"Input": input, "Weight": weight}
    if bias is not None:
        inputs["Bias"] = bias
    if h_0 is not None:
        inputs["H0"] = h_0
    helper.append_op("gru", inputs, outs,
                     {"is_reverse": check_bool("dynamic_gru", "is_reverse", is_reverse),
                      "gate_activation": gate_activation, "activation": candidate_activation,
                      "origin_mode": check_bool("dynamic_gru", "origin_mode", origin_mode)})
    return outs["Hidden"]


def layer_norm(input, scale=True, shift=True, begin_norm_axis=1, epsilon=1e-5,
               param_attr=None, bias_attr=None, act=None, name=None):
    """Fluid's layer_norm: each row of ``input`` (its dims from ``begin_norm_axis`` on)
    normalized to zero mean and unit variance, times a learned scale (ones at first) plus a
    learned shift (zeros), then ``act``."""
    helper = LayerHelper("layer_norm", param_attr=param_attr, bias_attr=bias_attr, act=act,
                         name=name)
    check_variable("layer_norm", "input", input, ("float32", "float64"))
    rank = len(input.shape)
    axis = check_int("layer_norm", "begin_norm_axis", begin_norm_axis, minimum=1,
                     maximum=max(rank - 1, 1))
    right = [int(d) for d in input.shape[axis:]]
    if any(d < 0 for d in right):
        raise helper.error(f"the dims from begin_norm_axis on must be known to size the scale "
                           f"and shift, found {list(input.shape)}")
    size = int(np.prod(right))
    dtype = input.dtype
    inputs = {"X": input}
    if check_bool("layer_norm", "scale", scale):
        inputs["Scale"] = helper.create_parameter(helper.param_attr, [size], dtype,
                                                  default_initializer=Constant(1.0))
    if check_bool("layer_norm", "shift", shift):
        inputs["Bias"] = helper.create_parameter(helper.bias_attr, [size], dtype, is_bias=True)
    outs = {k: helper.create_variable_for_type_inference(dtype, stop_gradient=k != "Y")
            for k in ("Y", "Mean", "Variance")}
    helper.append_op("layer_norm", inputs, outs,
                     {"epsilon": check_number("layer_norm", "epsilon", epsilon),
                      "begin_norm_axis": axis})
    return helper.append_activation(outs["Y"])


def l2_normalize(x, axis, epsilon=1e-12, name=None):
    """``x`` divided by its L2 norm along ``axis`` (the ``norm`` op)."""
    helper = LayerHelper("l2_normalize", name=name)
    check_variable("l2_normalize", "x", x, ("float32", "float64"))
    rank = len(x.shape)
    axis = check_int("l2_normalize", "axis", axis, minimum=-rank, maximum=rank - 1)
    out = helper.create_variable_for_type_inference(x.dtype)
    norm = helper.create_variable_for_type_inference(x.dtype, stop_gradient=True)
    helper.append_op("norm", {"X": x}, {"Out": out, "Norm": norm},
                     {"axis": axis, "epsilon": check_number("l2_normalize", "epsilon",
                                                            epsilon)})
    return out


def group_norm(input, groups, epsilon=1e-5, param_attr=None, bias_attr=None, act=None,
               data_layout="NCHW", name=None):
    """Fluid's group_norm over NCHW ``input``: each example's ``groups`` groups of channels
    normalized, then a learned per-channel scale (ones) and shift (zeros), then ``act``."""
    helper = LayerHelper("group_norm", param_attr=param_attr, bias_attr=bias_attr, act=act,
                         name=name)
    check_variable("group_norm", "input", input, ("float32", "float64"))
    if len(input.shape) < 2 or input.shape[1] < 0:
        raise helper.error(f"input must be [N, C, ...] with C known, found "
                           f"{list(input.shape)}")
    channels = int(input.shape[1])
    groups = check_int("group_norm", "groups", groups, minimum=1)
    if channels % groups:
        raise helper.error(f"groups ({groups}) must divide the {channels} channels")
    dtype = input.dtype
    inputs = {"X": input}
    scale = helper.create_parameter(helper.param_attr, [channels], dtype,
                                    default_initializer=Constant(1.0))
    if scale is not None:
        inputs["Scale"] = scale
    bias = helper.create_parameter(helper.bias_attr, [channels], dtype, is_bias=True)
    if bias is not None:
        inputs["Bias"] = bias
    outs = {k: helper.create_variable_for_type_inference(dtype, stop_gradient=k != "Y")
            for k in ("Y", "Mean", "Variance")}
    helper.append_op("group_norm", inputs, outs,
                     {"epsilon": check_number("group_norm", "epsilon", epsilon),
                      "groups": groups, "data_layout": data_layout})
    return helper.append_activation(outs["Y"])


def instance_norm(input, epsilon=1e-5, param_attr=None, bias_attr=None, name=None):
    """Fluid's instance_norm over NCHW ``input``: each example's channels normalized over
    their positions, then a learned per-channel scale (ones) and shift (zeros)."""
    helper = LayerHelper("instance_norm", param_attr=param_attr, bias_attr=bias_attr,
                         name=name)
    check_variable("instance_norm", "input", input, ("float32", "float64"))
    if len(input.shape) < 3 or input.shape[1] < 0:
        raise helper.error(f"input must be [N, C, positions...] with C known, found "
                           f"{list(input.shape)}")
    channels, dtype = int(input.shape[1]), input.dtype
    inputs = {"X": input}
    scale = helper.create_parameter(helper.param_attr, [channels], dtype,
                                    default_initializer=Constant(1.0))
    if scale is not None:
        inputs["Scale"] = scale
    bias = helper.create_parameter(helper.bias_attr, [channels], dtype, is_bias=True)
    if bias is not None:
        inputs["Bias"] = bias
    outs = {k: helper.create_variable_for_type_inference(dtype, stop_gradient=k != "Y")
            for k in ("Y", "SavedMean", "SavedVariance")}
    helper.append_op("instance_norm", inputs, outs,
                     {"epsilon": check_number("instance_norm", "epsilon", epsilon)})
    return outs["Y"]
