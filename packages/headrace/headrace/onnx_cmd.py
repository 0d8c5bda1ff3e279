"""``headrace export-onnx MODEL -o FILE [--opset N]``: a saved inference model (as
``save_inference_model`` writes it, or Paddle's) exported to ONNX with its own feeds and fetch
targets (``headrace.onnx.export``).

Exit status: 0 written; 1 the model cannot be exported (an op without an exporter: the error
names them all), or the onnx package is missing; 2 a usage error (a model that cannot be read,
an output folder that is missing, an opset out of range), said on one line of stderr.
"""
import os
import sys

from .errors import HeadraceError

__all__ = ["add_export_onnx_parser", "export_model"]


def _say_error(status, message):
    text = " ".join(str(message).split())   # one line (messages of op errors have several)
    print(f"headrace export-onnx: error: {text}", file=sys.stderr)
    return status


def export_model(model, output, model_filename=None, params_filename=None, opset=None,
                 out=None):
    """Load the inference model ``model`` into a fresh scope and export it to ``output``."""
    from .io.inference import load_inference_model
    from .io.tensor_stream import ModelFileError
    from .onnx import DEFAULT_OPSET, export
    from .runtime import CPUPlace, Executor, Scope
    out = out or sys.stdout
    if opset is not None:
        from .onnx import MIN_OPSET
        from .onnx.context import onnx_module
        try:
            newest = onnx_module().defs.onnx_opset_version()
        except HeadraceError as e:
            return _say_error(1, e)
        if not MIN_OPSET <= opset <= newest:
            return _say_error(2, f"--opset must be in [{MIN_OPSET}, {newest}] (the installed "
                                 f"onnx package's newest), got {opset}")
    folder = os.path.dirname(os.path.abspath(output))
    if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
        return _say_error(2, f"cannot write {output!r}: its folder is missing or not writable")
    scope = Scope()
    try:
        program, feeds, fetches = load_inference_model(
            model, Executor(CPUPlace()), model_filename=model_filename,
            params_filename=params_filename, scope=scope)
    except (ModelFileError, OSError) as e:
        return _say_error(2, f"cannot load the inference model {model!r}: {e}")
    try:
        proto = export(program, feeds, fetches, output,
                       opset_version=opset if opset is not None else DEFAULT_OPSET,
                       scope=scope)
    except HeadraceError as e:
        return _say_error(1, e)
    print(f"headrace export-onnx: wrote {output} (opset {proto.opset_import[0].version}, "
          f"{len(proto.graph.node)} nodes; inputs {', '.join(feeds)}; outputs "
          f"{', '.join(v.name for v in fetches)})", file=out)
    return 0


def _run(args, out):
    return export_model(args.model, args.output, args.model_filename, args.params_filename,
                        args.opset, out)


def add_export_onnx_parser(sub):
    """Register the ``export-onnx`` subcommand on ``headrace``'s argument parser."""
    p = sub.add_parser("export-onnx", help="export a saved inference model to an ONNX file")
    p.add_argument("model", help="the inference model: its directory, or a Paddle 2.x path "
                   "prefix (PREFIX.pdmodel + PREFIX.pdiparams)")
    p.add_argument("-o", "--output", required=True, metavar="FILE",
                   help="the ONNX file to write (e.g. model.onnx)")
    p.add_argument("--model-filename", metavar="NAME",
                   help="the program file inside the directory (default: __model__)")
    p.add_argument("--params-filename", metavar="NAME",
                   help="the combined parameter file (default: one file per parameter, or "
                        "the .pdiparams beside a .pdmodel)")
    p.add_argument("--opset", type=int, metavar="N",
                   help="the ONNX opset to target (default: 17; 13 up to the onnx package's "
                        "newest)")
    p.set_defaults(run=_run)
    return p
