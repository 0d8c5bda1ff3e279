"""ONNX exporters of the math plugin's ops that the core's exporters (headrace.onnx.ops) do
not cover, announced through the ``headrace.onnx`` entry point: fc, which the inference passes
make (headrace.passes.fc_fuse), so an optimized program exports too."""
from headrace.onnx import hookimpl

from . import fc


@hookimpl
def headrace_onnx_register_exporters(registry):
    for op_type, fn in fc.EXPORTERS.items():
        registry.add(op_type, fn)
