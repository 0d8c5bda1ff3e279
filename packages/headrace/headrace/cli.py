"""The ``headrace`` command: look at the installed ops and at saved programs.

    headrace ops [TYPE ...] [--brief]   registered ops: slots, attributes, kernels per device
    headrace plugins                    loaded plugins and the ones that failed
    headrace show FILE [--all-attrs]    a saved program (ProgramDesc bytes), readably
    headrace demo [--epochs N] [--device cpu|cuda]  train a CNN on the digits, save, reload
    headrace new-plugin NAME [--dir D]  write a working op plugin skeleton (pip install ./NAME)
"""
import argparse
import sys

from .errors import HeadraceError
from .launch import add_launch_parser
from .profile_cmd import add_profile_parser

__all__ = ["main"]


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
        defs = [registry.get(t) for t in args.types]
    else:
        defs = registry.ops()
    for d in defs:
        print(_describe_op(d, registry, args.brief), file=out)
    if not args.types:
        print(f"{len(defs)} ops from {len(registry.plugins)} plugins", file=out)
    _unavailable_notes(registry, out)
    return 0


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
        print(f"{name}: FAILED: {type(err).__name__}: {err}", file=out)
    _unavailable_notes(registry, out)
    return 1 if registry.failed else 0


def cmd_show(args, out):
    from .framework import Program
    try:
        with open(args.file, "rb") as f:
            data = f.read()
    except OSError as e:
        raise HeadraceError(f"cannot read {args.file}: {e.strerror}") from None
    program = Program.parse_from_string(data)
    print(program.to_string(show_bookkeeping=args.all_attrs), file=out)
    return 0


def cmd_demo(args, out):
    from .demo import run
    from .runtime import CPUPlace, CUDAPlace
    place = CUDAPlace(0) if args.device == "cuda" else CPUPlace()
    result = run(epochs=args.epochs, out_dir=args.out, place=place)
    ok = result["test_accuracy"] >= 0.97 and result["reload_matches"]
    return 0 if ok else 1


def cmd_new_plugin(args, out):
    from .plugin_template import new_plugin
    path = new_plugin(args.name, args.dir)
    print(f"wrote {path}\n  install: python -m pip install {path}\n"
          f"  test:    python -m pip install pytest && python -m pytest {path}/tests", file=out)
    return 0


def main(argv=None, out=None):
    out = out or sys.stdout
    parser = argparse.ArgumentParser(prog="headrace", description="headrace command line")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("ops", help="list registered ops with slots, attributes and kernels")
    p.add_argument("types", nargs="*", help="only these op types")
    p.add_argument("--brief", action="store_true", help="one line per op")
    p.set_defaults(run=cmd_ops)
    p = sub.add_parser("plugins", help="list loaded and failed plugins")
    p.set_defaults(run=cmd_plugins)
    p = sub.add_parser("show", help="print a saved program readably")
    p.add_argument("file", help="a serialized ProgramDesc (.pdmodel, __model__, ...)")
    p.add_argument("--all-attrs", action="store_true",
                   help="also show bookkeeping attributes (op_role, op_callstack, ...)")
    p.set_defaults(run=cmd_show)
    p = sub.add_parser("demo", help="train a small CNN on the digits data set end to end")
    p.add_argument("--epochs", type=int, default=15)
    p.add_argument("--out", help="where to save the inference model (default: a temp dir)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="train on the CPU (default) or on CUDAPlace(0)")
    p.set_defaults(run=cmd_demo)
    p = sub.add_parser("new-plugin", help="write a working op plugin skeleton to start from")
    p.add_argument("name", help="distribution name, e.g. myops (lowercase, digits, - and _)")
    p.add_argument("--dir", default=".", help="where to create it (default: here)")
    p.set_defaults(run=cmd_new_plugin)
    add_launch_parser(sub)
    add_profile_parser(sub)
    args = parser.parse_args(argv)
    try:
        return args.run(args, out)
    except HeadraceError as e:
        print(f"headrace {args.command}: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
