"""`pip install .` of a clean clone into a fresh venv (issue 13 item 7: at most 2 minutes on the
2-core machine): wall time, the CPU time of pip and everything it ran (user + sys: what the
build itself costs, whatever else the machine is running), the load average before and after,
and when each phase ended, read from pip -v's output as it comes:

- build_env: the isolated build environment (setuptools, Cython, NumPy, SciPy) installed
- metadata: the wheel's metadata prepared
- cythonize: from the compile line to the first gcc job
- gcc: from the first gcc job to setuptools' install step (the last link)
- wheel: the wheel written
- install: the wheel and its dependencies installed into the venv

    python benchmarks/bench_install.py [--repo .] [--keep DIR]

It needs network or a local package index for the build environment and the dependencies, as
any user's `pip install .` does. Run it where nothing else compiles: the two cores are shared.
"""
import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

# (phase, the first line of pip -v's output that ends it)
MARKS = [("build_env", r"Installing build dependencies: finished"),
         ("metadata", r"Preparing metadata \(pyproject.toml\): finished"),
         ("cythonize_start", r"compiling \d+ Cython modules"),
         ("gcc_start", r"^\s*building '"),
         ("gcc_end", r"^\s*running install$"),
         ("wheel", r"Created wheel for"),
         ("install", r"^Successfully installed")]


def run_install(repo, work):
    clone, venv = os.path.join(work, "clone"), os.path.join(work, "venv")
    subprocess.run(["git", "clone", "-q", repo, clone], check=True)
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    pip = os.path.join(venv, "bin", "pip")
    subprocess.run([pip, "install", "-q", "-U", "pip"], check=True, capture_output=True)
    load_before = os.getloadavg()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    phases, log = {}, []
    proc = subprocess.Popen([pip, "install", "-v", "."], cwd=clone, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    for line in proc.stdout:
        log.append(line)
        for phase, pattern in MARKS:
            if phase not in phases and re.search(pattern, line):
                phases[phase] = round(time.perf_counter() - t0, 1)
    if proc.wait():
        sys.stdout.writelines(log[-40:])
        raise SystemExit(f"pip install . exited {proc.returncode}")
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    modules = sum(1 for line in log if re.search(MARKS[3][1], line))
    return {"wall_s": round(wall, 1), "user_s": round(after.ru_utime - before.ru_utime, 1),
            "sys_s": round(after.ru_stime - before.ru_stime, 1), "extensions": modules,
            "load_before": [round(v, 2) for v in load_before],
            "load_after": [round(v, 2) for v in os.getloadavg()], "phases_end_s": phases}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    help="the git repository to clone (its HEAD; default: this one)")
    ap.add_argument("--keep", help="build here and keep the clone and venv (default: a "
                                   "temporary directory, removed)")
    args = ap.parse_args()
    if args.keep:
        os.makedirs(args.keep)
        figures = run_install(args.repo, args.keep)
    else:
        with tempfile.TemporaryDirectory(prefix="bench_install_") as work:
            figures = run_install(args.repo, work)
    print(json.dumps({"benchmark": "pip_install_root", **figures, "cpus": os.cpu_count()}))


if __name__ == "__main__":
    main()
