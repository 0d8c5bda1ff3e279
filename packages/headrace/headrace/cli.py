"""The ``headrace`` command (also ``python -m headrace``): the installed ops, saved programs,
the demo.

    headrace ops [TYPE ...] [--brief]   registered ops: slots, attributes, kernels per device
    headrace plugins                    loaded plugins and the ones that failed
    headrace show FILE [--all-attrs]    a saved program (ProgramDesc bytes), readably
    headrace show --graph FILE [-o OUT] the program drawn with Graphviz (svg, png, pdf...)
    headrace demo [--epochs N] [--out DIR] [--min-accuracy A] [--device cpu|cuda]
                                        train a CNN on the digits, save, reload, compare
    headrace new-plugin NAME [--dir D]  write a working op plugin skeleton (pip install ./NAME)
    headrace launch -n N script.py ...  run a script on N MPI ranks
    headrace profile script.py ...      run a script under the op profiler: table, trace
    headrace export-onnx MODEL -o FILE  a saved inference model as an ONNX file
    headrace --version | --log-level LEVEL

A subcommand is one ``add_<name>_parser(sub)`` call in ``build_parser``: it adds its parser
(every option with help text) and sets ``run=f(args, out) -> exit status``.

Exit statuses: 0 done; 1 the command ran and failed (a plugin that failed to load, a demo
below its accuracy gate, an error while working); 2 a usage error (a bad option value, a path
that cannot be read or written, a file that is not a program), said on one line of stderr,
never a traceback; 130 interrupted; 141 the reader of the output went away (``| head``),
quietly, as a command killed by SIGPIPE.
"""
import argparse
import contextlib
import logging
import os
import sys

from . import __version__
from .errors import HeadraceError
from .framework.printable import printable
from .graph_cmd import add_graph_options
from .launch import add_launch_parser
from .onnx_cmd import add_export_onnx_parser
from .profile_cmd import add_profile_parser

__all__ = ["main", "build_parser", "UsageError"]

LOG_LEVELS = ("debug", "info", "warning", "error")


class UsageError(HeadraceError):
    """A mistake in what the user asked for: exit status 2, one line on stderr."""


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors raised as one-line UsageErrors (not usage text + exit)."""

    def error(self, message):
        raise UsageError(f"{message} (see {self.prog} --help)")


def _one_line(text):
    """``text`` on one line, its characters printable (names from files are in messages)."""
    return printable("; ".join(line.strip() for line in str(text).splitlines() if line.strip()))


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return value


def _fraction(text):
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text!r}")
    return value


# -- ops, plugins -----------------------------------------------------------------------------

def _slot_text(slot):
    flags = slot.flags()
    return slot.name + (f" ({', '.join(flags)})" if flags else "")


def _describe_op(opdef, registry, brief):
    head = f"{opdef.type}  [plugin {registry.plugin_of(opdef.type)}]"
    notes = [n for n, on in (("no gradient", not opdef.differentiable),
                             ("executor-interpreted", opdef.no_kernel)) if on]
    if notes:
        head += f"  ({', '.join(notes)})"
    if brief:
        return head
    lines = [head]
    if opdef.doc:
        lines.append(f"    {opdef.doc.strip().splitlines()[0]}")
    lines.append("    inputs:  " + (", ".join(map(_slot_text, opdef.inputs)) or "-"))
    lines.append("    outputs: " + (", ".join(map(_slot_text, opdef.outputs)) or "-"))
    attrs = [repr(a) for a in opdef.attrs.values()]
    lines.append("    attrs:   " + (", ".join(attrs) or "-"))
    kernels = registry.kernels_for(opdef.type)
    if opdef.no_kernel:
        text = "interpreted by the executor"
    elif kernels:
        text = "; ".join(f"{d}: {', '.join(ts) if ts else 'any dtype'}"
                         for d, ts in kernels.items())
    else:
        text = "none yet"
    lines.append(f"    kernels: {text}")
    return "\n".join(lines)


# What to install when a device's kernel packages fail to import for want of a dependency.
_INSTALL_HINTS = {"cuda": "the CUDA kernels need Numba's CUDA support: "
                          "pip install headrace[cuda]"}


def _unavailable_notes(registry, out):
    for device, errors in registry.unavailable.items():
        for e in errors:
            print(f"note: {device} kernels unavailable here: {e}", file=out)
        hint = _INSTALL_HINTS.get(device)
        if hint and any("No module named" in str(e) for e in errors):
            print(f"note: {hint}", file=out)


def cmd_ops(args, out):
    from .ops import default_registry
    registry = default_registry()
    if args.types:
        try:
            defs = [registry.get(t) for t in args.types]
        except HeadraceError as e:   # an op type nobody registered: the user's typo
            raise UsageError(str(e)) from None
    else:
        defs = registry.ops()
    for d in defs:
        print(_describe_op(d, registry, args.brief), file=out)
    if not args.types:
        print(f"{len(defs)} ops from {len(registry.plugins)} plugins", file=out)
    _unavailable_notes(registry, out)
    return 0


def add_ops_parser(sub):
    p = sub.add_parser("ops", help="list registered ops with slots, attributes and kernels")
    p.add_argument("types", nargs="*", help="only these op types (default: every op)")
    p.add_argument("--brief", action="store_true", help="one line per op")
    p.set_defaults(run=cmd_ops)
    return p


def _plugin_line(registry, name):
    line = f"{name}: {len(registry.ops_of(name))} ops"
    devices = [d for d in registry.known_devices() if registry.device(d).plugin == name]
    if devices:
        line += f", devices {', '.join(devices)}"
    return line


def cmd_plugins(args, out):
    from .ops import default_registry
    registry = default_registry()
    registry.kernels_for(None)  # import every device's kernel packages: overrides, failures
    for name in registry.plugins:
        print(_plugin_line(registry, name), file=out)
    for o in registry.overrides:
        dtypes = ", ".join(o.dtypes) if o.dtypes else "any dtype"
        print(f"{o.plugin}: overrides kernel {o.op_type}/{o.device} ({dtypes}) of "
              f"{', '.join(o.replaced)}", file=out)
    for name, err in registry.failed.items():
        print(f"{name}: FAILED: {type(err).__name__}: {_one_line(err)}", file=out)
    _unavailable_notes(registry, out)
    return 1 if registry.failed else 0


def add_plugins_parser(sub):
    p = sub.add_parser("plugins", help="list loaded and failed plugins (exit 1 if one failed)")
    p.set_defaults(run=cmd_plugins)
    return p


# -- show -------------------------------------------------------------------------------------

def cmd_show(args, out):
    from .errors import ProgramParseError
    from .framework import Program
    try:
        with open(args.file, "rb") as f:
            data = f.read()
    except OSError as e:
        raise UsageError(f"cannot read {args.file}: {e.strerror}") from None
    try:
        program = Program.parse_from_string(data)
    except ProgramParseError as e:
        raise UsageError(f"{args.file} is not a program file: {e}") from None
    # Names are escaped by to_string: a crafted file cannot forge lines of this listing.
    print(program.to_string(show_bookkeeping=args.all_attrs), file=out)
    return 0


def add_show_parser(sub):
    p = sub.add_parser("show", help="print a saved program readably (names escaped)")
    p.add_argument("file", help="a serialized ProgramDesc (.pdmodel, __model__, ...)")
    p.add_argument("--all-attrs", action="store_true",
                   help="also show bookkeeping attributes (op_role, op_callstack, ...)")
    p.set_defaults(run=cmd_show)
    return p


# -- demo -------------------------------------------------------------------------------------

def cmd_demo(args, out):
    from .demo import check_out_dir, run
    from .runtime import CPUPlace, CUDAPlace
    if args.out is not None:
        try:   # before training: a path where nothing can be saved fails at once
            check_out_dir(args.out)
        except HeadraceError as e:
            raise UsageError(f"--out {args.out}: {e}") from None
    place = CUDAPlace(0) if args.device == "cuda" else CPUPlace()
    with contextlib.redirect_stdout(out):
        result = run(epochs=args.epochs, seed=args.seed, out_dir=args.out, place=place)
    failures = []
    if not result["reload_matches"]:
        failures.append("the reloaded model predicts differently")
    if args.min_accuracy is not None and result["test_accuracy"] < args.min_accuracy:
        failures.append(f"test accuracy {result['test_accuracy']:.4f} is below "
                        f"--min-accuracy {args.min_accuracy:g}")
    print(f"result: {'FAILED: ' + '; '.join(failures) if failures else 'ok'} (test accuracy "
          f"{result['test_accuracy']:.4f}, reloaded predictions "
          f"{'match' if result['reload_matches'] else 'differ'})", file=out)
    return 1 if failures else 0


def add_demo_parser(sub):
    p = sub.add_parser("demo", help="train a small CNN on the digits data set end to end")
    p.add_argument("--epochs", type=_positive_int, default=15,
                   help="passes over the training images (default: 15, about 97%% accuracy)")
    p.add_argument("--out", metavar="DIR",
                   help="save the inference model here (checked before training; default: "
                        "a temporary directory, removed at the end)")
    p.add_argument("--min-accuracy", type=_fraction, metavar="A",
                   help="fail (exit 1) when the test accuracy is below A, in [0, 1] "
                        "(default: no gate; the demo fails only if the reloaded model "
                        "predicts differently)")
    p.add_argument("--seed", type=int, default=1,
                   help="the programs' random_seed and the data order's seed (default: 1)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="train on the CPU (default) or on CUDAPlace(0)")
    p.set_defaults(run=cmd_demo)
    return p


# -- new-plugin -------------------------------------------------------------------------------

def cmd_new_plugin(args, out):
    from .plugin_template import new_plugin
    try:
        path = new_plugin(args.name, args.dir)
    except HeadraceError as e:   # a bad name, an existing directory: the user's to change
        raise UsageError(str(e)) from None
    except OSError as e:
        raise UsageError(f"cannot write the plugin into {args.dir}: "
                         f"{e.strerror or e} ({e.filename})") from None
    print(f"wrote {path}\n  install: python -m pip install {path}\n"
          f"  test:    python -m pip install pytest && python -m pytest {path}/tests", file=out)
    return 0


def add_new_plugin_parser(sub):
    p = sub.add_parser("new-plugin", help="write a working op plugin skeleton to start from")
    p.add_argument("name", help="distribution name, e.g. myops (lowercase, digits, - and _)")
    p.add_argument("--dir", default=".", help="where to create it (default: here)")
    p.set_defaults(run=cmd_new_plugin)
    return p


# -- the command ------------------------------------------------------------------------------

def build_parser():
    parser = _Parser(prog="headrace", description="headrace: a static-graph deep-learning "
                     "framework; its ops, saved programs and a demo.")
    parser.add_argument("--version", action="version", version=f"headrace {__version__}",
                        help="print headrace's version and exit")
    parser.add_argument("--log-level", choices=LOG_LEVELS, default="warning",
                        help="show the 'headrace' logger's messages from this level up on "
                             "stderr (default: warning)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_ops_parser(sub)
    add_plugins_parser(sub)
    add_graph_options(add_show_parser(sub))
    add_demo_parser(sub)
    add_new_plugin_parser(sub)
    add_launch_parser(sub)
    add_profile_parser(sub)
    add_export_onnx_parser(sub)
    return parser


@contextlib.contextmanager
def _log_to_stderr(level):
    """The 'headrace' logger (a NullHandler by default) printed on stderr while the command
    runs; the handler is removed after, so ``main`` called in a process leaves no trace."""
    logger = logging.getLogger("headrace")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("headrace: %(levelname)s: %(name)s: %(message)s"))
    before = logger.level
    logger.addHandler(handler)
    logger.setLevel(level.upper())
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(before)


def _silence(out):
    """After EPIPE: point the output's descriptor at /dev/null, so that the flush at exit
    does not raise again (Python's documented recipe)."""
    try:
        fd = out.fileno()
    except (AttributeError, OSError, ValueError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def main(argv=None, out=None):
    """Run ``headrace`` with ``argv`` (default: sys.argv[1:]), writing to ``out`` (default:
    stdout); return the exit status."""
    out = out or sys.stdout
    command = "headrace"
    try:
        args = build_parser().parse_args(argv)
        command = f"headrace {args.command}"
        with _log_to_stderr(args.log_level):
            status = args.run(args, out)
        out.flush()   # a reader gone before the last block: EPIPE here, not at exit
        return status
    except SystemExit as e:   # --help, --version
        return e.code or 0
    except BrokenPipeError:
        _silence(out)
        return 141
    except KeyboardInterrupt:
        print(f"{command}: interrupted", file=sys.stderr)
        return 130
    except UsageError as e:
        print(f"{command}: error: {_one_line(e)}", file=sys.stderr)
        return 2
    except (HeadraceError, OSError) as e:
        print(f"{command}: error: {_one_line(e)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
