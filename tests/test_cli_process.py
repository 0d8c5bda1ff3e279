"""The `headrace` command as a process (issue 13 item 6): `python -m headrace`, `--version`,
quiet broken pipes, usage errors without tracebacks, the demo's output in a log and on a
terminal, its temporary files, and `--out` checked before training."""
import fcntl
import os
import pty
import shutil
import struct
import subprocess
import sys
import termios

import pytest

import headrace as hr

HEADRACE = [sys.executable, "-m", "headrace"]


def headrace(*argv, env=None, **kw):
    return subprocess.run(HEADRACE + list(argv), capture_output=True, text=True, timeout=300,
                          env=env, **kw)


def clean_env(tmp):
    """The environment with TMPDIR in a folder of its own, to see what is left there."""
    tmp.mkdir()
    return dict(os.environ, TMPDIR=str(tmp), OMP_NUM_THREADS="1")


def test_python_dash_m_and_version():
    r = headrace("--version")
    assert (r.returncode, r.stdout, r.stderr) == (0, f"headrace {hr.__version__}\n", "")
    script = shutil.which("headrace", path=os.path.dirname(sys.executable))
    if script:   # the console script installed beside this Python says the same
        assert subprocess.run([script, "--version"], capture_output=True, text=True,
                              timeout=60).stdout == r.stdout
    r = headrace("--help")
    assert r.returncode == 0 and "usage: headrace" in r.stdout and "demo" in r.stdout


def test_a_closed_pipe_ends_the_listing_quietly():
    """`headrace ops | head -1`: the listing (~100 KB, more than a pipe holds) stops at the
    broken pipe with SIGPIPE's status 141 and nothing on stderr about it."""
    proc = subprocess.Popen(HEADRACE + ["ops"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert first.startswith(b"abs  [plugin ") and "Traceback" not in err and \
        "BrokenPipe" not in err and "Exception ignored" not in err


def test_the_issues_pipeline_with_head():
    r = subprocess.run(f"{' '.join(HEADRACE)} ops --brief | head -3", shell=True,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and len(r.stdout.splitlines()) == 3
    assert "Traceback" not in r.stderr and "BrokenPipe" not in r.stderr


@pytest.mark.parametrize("argv, status, start", [
    (["show", "/nonexistent/model.pdmodel"], 2, "headrace show: error: cannot read "),
    (["demo", "--epochs", "x"], 2, "headrace: error: argument --epochs: "),
    (["ops", "no_such_op"], 2, "headrace ops: error: op 'no_such_op'"),
])
def test_usage_errors_are_one_line_without_a_traceback(argv, status, start):
    r = headrace(*argv)
    assert r.returncode == status and r.stdout == ""
    assert r.stderr.startswith(start) and r.stderr.count("\n") == 1, r.stderr


def test_demo_out_that_cannot_be_written_fails_before_training(tmp_path):
    r = headrace("demo", "--out", "/proc/nope", env=clean_env(tmp_path / "tmp"))
    assert r.returncode == 2 and r.stdout == ""   # no "digits: ..." line: never trained
    assert r.stderr.startswith("headrace demo: error: --out /proc/nope: ")
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert os.listdir(tmp_path / "tmp") == []


def test_demo_into_a_log_prints_its_result_without_progress_frames(tmp_path):
    """Output to pipes (a log): no tqdm carriage-return frames; the result is printed and the
    exit status is 0 with one epoch (no hidden accuracy gate); no temporary file is left."""
    env = clean_env(tmp_path / "tmp")
    r = headrace("demo", "--epochs", "1", env=env)
    assert r.returncode == 0, r.stderr
    assert "\r" not in r.stdout and "\r" not in r.stderr and "batch/s" not in r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("digits: ") and lines[1].startswith("epoch  1/1: loss ")
    assert lines[-1].startswith("result: ok (test accuracy 0.") and \
        lines[-1].endswith("reloaded predictions match)")
    assert os.listdir(env["TMPDIR"]) == []


def test_demo_on_a_terminal_draws_its_progress_bar(tmp_path):
    """The other side of the check above: on a terminal the bar is there (so its absence from
    a log is the terminal test's doing); the temporary model is removed here too."""
    pytest.importorskip("tqdm")
    env = clean_env(tmp_path / "tmp")
    master, slave = pty.openpty()
    # A terminal of 24 x 100 (a fresh pty has 0 columns: tqdm would draw empty bars).
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    proc = subprocess.Popen(HEADRACE + ["demo", "--epochs", "1"], stdout=slave, stderr=slave,
                            stdin=subprocess.DEVNULL, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:   # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait(timeout=300) == 0
    text = b"".join(chunks).decode(errors="replace")
    assert "\r" in text.replace("\r\n", "") and "epoch 1/1" in text and "result: ok" in text
    assert os.listdir(env["TMPDIR"]) == []


def test_log_level_shows_the_headrace_logger_on_stderr():
    r = headrace("--log-level", "debug", "ops", "relu")
    assert r.returncode == 0, r.stderr
    assert "headrace: DEBUG: headrace.ops.plugins: registry built: plugins headrace:core" \
        in r.stderr, r.stderr
    quiet = headrace("ops", "relu")
    assert quiet.returncode == 0 and "DEBUG" not in quiet.stderr and quiet.stdout == r.stdout


# numba (and numba-cuda) not installed: their imports fail as on a machine without them.
_WITHOUT_NUMBA = """
import sys
class NoNumba:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("numba", "numba_cuda"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
for m in [m for m in sys.modules if m.split(".")[0] in ("numba", "numba_cuda")]:
    del sys.modules[m]
sys.meta_path.insert(0, NoNumba())
from headrace.cli import main
sys.exit(main(["ops", "mul"]))
"""


def test_ops_without_numba_says_how_to_get_the_cuda_kernels():
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    r = subprocess.run([sys.executable, "-c", _WITHOUT_NUMBA], capture_output=True, text=True,
                       timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    assert "    kernels: cpu: float32, float64\n" in r.stdout      # the CPU's only
    assert "note: cuda kernels unavailable here" in r.stdout
    assert r.stdout.rstrip().endswith("pip install headrace[cuda]")
