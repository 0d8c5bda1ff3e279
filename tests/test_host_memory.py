"""The first Executor asks glibc's malloc to keep large freed blocks in the heap
(headrace.runtime.host_memory): an 8 MiB array then comes from the heap, not from a fresh
mmap() whose pages a training step would fault in and zero again every step."""
import ctypes
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not hasattr(ctypes.CDLL(None), "mallinfo2"),
    reason="mallinfo2 is glibc's (2.33+): the thresholds are glibc malloc's")

CODE = textwrap.dedent("""
    import ctypes
    import numpy as np
    import headrace as hr
    from headrace.runtime import host_memory

    class MallInfo2(ctypes.Structure):
        _fields_ = [(n, ctypes.c_size_t) for n in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
            "uordblks", "fordblks", "keepcost")]
    libc = ctypes.CDLL(None)
    libc.mallinfo2.restype = MallInfo2
    hr.Executor(hr.CPUPlace())
    before = libc.mallinfo2().hblkhd            # bytes in mmapped blocks
    a = np.ones(8 << 20, np.uint8)
    print(host_memory.tune(), libc.mallinfo2().hblkhd - before >= 8 << 20)
""")


def _run(**env):
    full = {k: v for k, v in os.environ.items()
            if k not in ("HEADRACE_MALLOC_TUNE", "MALLOC_MMAP_THRESHOLD_")}
    full.update(env)
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True,
                         env=full, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_large_blocks_come_from_the_heap_after_the_first_executor():
    assert _run() == ["True", "False"]


@pytest.mark.parametrize("env", [{"HEADRACE_MALLOC_TUNE": "0"},
                                 {"MALLOC_MMAP_THRESHOLD_": "131072"}])
def test_the_user_can_keep_malloc_as_it_was(env):
    assert _run(**env) == ["False", "True"]
