"""ONNX export of inference programs: ``headrace.onnx.export(program, feed_names,
fetch_targets, path)`` (and ``headrace export-onnx``).

The ``onnx`` package is an optional dependency (``pip install headrace[onnx]``), imported only
when an export runs: importing this module needs nothing beyond headrace. Exporters are one op
family per module in :mod:`headrace.onnx.ops`; plugins add theirs through the
``headrace_onnx_register_exporters`` hook (:mod:`headrace.onnx.registry`).
"""
from .export import DEFAULT_OPSET, MIN_OPSET, export
from .registry import ExporterRegistry, build_exporters, hookimpl

__all__ = ["export", "DEFAULT_OPSET", "MIN_OPSET", "ExporterRegistry", "build_exporters",
           "hookimpl"]
