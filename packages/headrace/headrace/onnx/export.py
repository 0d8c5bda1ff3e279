"""``export(program, feed_names, fetch_targets, path)``: an inference program as an ONNX model.

The program is pruned exactly as ``save_inference_model`` prunes it (``clone(for_test=True)``,
the ops the targets need given the feeds), so dropout and batch_norm are in their test modes.
Each op goes through its exporter (:mod:`headrace.onnx.registry`); the persistable variables
the ops read become initializers holding their values in ``scope``. Every op type without an
exporter is named in one error before anything is built, so one try shows all that is missing.
"""
import numpy as np

from importlib import metadata
from ..errors import HeadraceError, OpError
from ..framework import Program
from ..io.inference import _names, inference_program
from ..runtime import global_scope
from .context import ExportContext, onnx_module
from .registry import build_exporters

__all__ = ["export", "DEFAULT_OPSET", "MIN_OPSET"]


def _version():
    # Not headrace.__version__: the package imports this module (no import cycle).
    try:
        return metadata.version("headrace")
    except metadata.PackageNotFoundError:
        return "unknown"


DEFAULT_OPSET = 17      # LayerNormalization is a single node from 17 on
MIN_OPSET = 13          # axes as inputs (Squeeze, Unsqueeze, ReduceSum, Split) from 13 on
_HOLDERS = ("feed", "fetch")


def _unsupported(ops, exporters):
    missing = [op for op in ops if op.type not in exporters]
    if not missing:
        return
    types = sorted({op.type for op in missing})
    first = missing[0]
    raise OpError(
        f"cannot be exported to ONNX: no exporter for op type{'s' if len(types) > 1 else ''} "
        f"{', '.join(types)} ({len(missing)} op{'s' if len(missing) > 1 else ''} of the "
        f"pruned inference program)",
        op_type=first.type, block_idx=first.block.idx, op_idx=first.idx, source=first.source,
        expected="ops with an ONNX exporter (headrace.onnx.build_exporters().types(), or a "
                 "plugin's headrace_onnx_register_exporters hook)",
        found=", ".join(types))


def _value(scope, name, reader):
    value = scope.find(name)
    if value is None:
        raise HeadraceError(
            f"ONNX export: persistable variable '{name}' (read by op '{reader.type}', block "
            f"{reader.block.idx}, op #{reader.idx}) has no value in the scope: run the startup "
            f"program (or load the parameters) into the scope given to export")
    array = value.numpy() if hasattr(value, "numpy") else value
    return np.ascontiguousarray(np.asarray(array))


def _value_info(ctx, name):
    shape = [d if d >= 0 else None for d in ctx.shape(name)]
    return ctx.onnx.helper.make_tensor_value_info(name, ctx.onnx_dtype(ctx.dtype(name)), shape)


def export(program, feed_names, fetch_targets, path=None, opset_version=DEFAULT_OPSET,
           scope=None, exporters=None, check=True):
    """Export the inference part of ``program`` (the ops that compute ``fetch_targets`` from
    ``feed_names``) as an ONNX model; parameters come from ``scope`` (default: the global
    scope). Writes it to ``path`` when given; returns the ``onnx.ModelProto``.

    ``exporters``: an :class:`~headrace.onnx.ExporterRegistry` (default: the built-in ones and
    the installed plugins'). ``check``: run ``onnx.checker`` with full shape inference."""
    onnx = onnx_module()
    if not isinstance(program, Program):
        raise HeadraceError(f"onnx.export: program must be a Program, got "
                            f"{type(program).__name__}")
    max_opset = onnx.defs.onnx_opset_version()
    if not isinstance(opset_version, int) or not MIN_OPSET <= opset_version <= max_opset:
        raise HeadraceError(f"onnx.export: opset_version must be an int in [{MIN_OPSET}, "
                            f"{max_opset}] (this onnx package's newest), got {opset_version!r}")
    feeds = _names(feed_names, "feed_names")
    targets = _names(fetch_targets, "fetch_targets")
    scope = scope if scope is not None else global_scope()
    exporters = exporters if exporters is not None else build_exporters()
    block = inference_program(program, feeds, targets).global_block()
    ops = [op for op in block.ops if op.type not in _HOLDERS]
    _unsupported(ops, exporters)
    ctx = ExportContext(block, opset_version)
    for name in targets:
        if name in feeds or block.find_var(name).persistable:
            raise HeadraceError(f"onnx.export: fetch target '{name}' is fed or persistable; "
                                f"an ONNX graph output must be computed by its nodes")
    produced = set(feeds)
    for op in ops:
        for name in op.input_arg_names:
            if name not in produced and name not in ctx.initializers:
                ctx.initializers[name] = _value(scope, name, op)
        ctx.op = op
        try:
            exporters.get(op.type)(ctx, op)
        except OpError as e:   # a plugin's exporter may raise one without the location
            e.locate(op_type=op.type, block_idx=op.block.idx, op_idx=op.idx, source=op.source)
            raise
        produced.update(op.output_arg_names)
    ctx.op = None
    helper = onnx.helper
    used = {n for node in ctx.nodes for n in node.input}
    initializers = [onnx.numpy_helper.from_array(array, name)
                    for name, array in ctx.initializers.items() if name in used]
    graph = helper.make_graph(ctx.nodes, "headrace", [_value_info(ctx, n) for n in feeds],
                              [_value_info(ctx, n) for n in targets], initializers)
    opsets = [helper.make_opsetid("", opset_version)]
    model = helper.make_model(graph, opset_imports=opsets, producer_name="headrace",
                              producer_version=_version(),
                              ir_version=helper.find_min_ir_version_for(opsets))
    if check:
        onnx.checker.check_model(model, full_check=True)
    if path is not None:
        onnx.save(model, str(path))
    return model
