"""``headrace profile [--sort KEY] [--trace FILE] [--state S] script.py [args...]``: run a
script under the op profiler (``headrace.profiler``) as ``python script.py args`` would run it,
then print the per-op-type table and write the Chrome trace (open it in Perfetto).

Exit status: the script's (0 when it ends normally, its ``sys.exit`` code, 1 when it raises:
its traceback is printed as Python prints it); 2 when the script cannot be read. The table and
the trace cover what ran, even when the script failed part way.
"""
import os
import runpy
import sys
import traceback

from . import profiler as prof_mod

__all__ = ["add_profile_parser", "profile_script"]


def profile_script(script, args=(), sorted_key="total", trace=None, state="CPU", out=None):
    """Run ``script`` with ``args`` under the profiler; print the table to ``out`` (default
    stdout), write the trace to ``trace`` when given. Returns the script's exit status."""
    out = out or sys.stdout
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [script, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    status = 0
    prof_mod.start_profiler(state)
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if e.code is not None and not isinstance(e.code, int):
            print(e.code, file=sys.stderr)
    except KeyboardInterrupt:
        raise
    except BaseException:
        traceback.print_exc()
        status = 1
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        prof_mod.stop_profiler(sorted_key, trace, out)
    if trace:
        print(f"headrace profile: Chrome trace written to {trace} (open it in "
              f"https://ui.perfetto.dev)", file=out)
    return status


def _run(args, out):
    if not args.script:
        print("headrace profile: error: give the script to run", file=sys.stderr)
        return 2
    script, rest = args.script[0], args.script[1:]
    if not os.path.isfile(script):
        print(f"headrace profile: error: cannot read the script {script!r}: no such file",
              file=sys.stderr)
        return 2
    trace = args.trace or None
    if trace:
        folder = os.path.dirname(os.path.abspath(trace))
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            print(f"headrace profile: error: cannot write the trace {trace!r}: its folder "
                  f"is missing or not writable", file=sys.stderr)
            return 2
    return profile_script(script, rest, args.sort, trace, args.state, out)


def add_profile_parser(sub):
    """Register the ``profile`` subcommand on ``headrace``'s argument parser."""
    p = sub.add_parser("profile", help="run a script under the op profiler: a per-op-type "
                       "table and a Chrome trace")
    p.add_argument("--sort", choices=prof_mod.SORT_KEYS, default="total",
                   help="the table's order, descending (default: total time)")
    p.add_argument("--trace", default="headrace-trace.json", metavar="FILE",
                   help="where to write the Chrome trace (default: headrace-trace.json; "
                        "'' for none)")
    p.add_argument("--state", choices=prof_mod.STATES, default="CPU",
                   help="CPU: time the launches; GPU/All: wait for each CUDA op's kernels")
    p.add_argument("script", nargs="...", help="script.py [args...]")
    p.set_defaults(run=_run)
    return p
