"""One CUDA stream per Executor (issue 11): a run's launches and copies go on it, the host
waits at the fetch, and kernels find it as current_stream() or KernelInfo.stream."""
import numpy as np
import pytest

import headrace as hr
from headrace.runtime.kernel_info import KernelInfo

pytestmark = pytest.mark.cuda


def _relu_program():
    prog = hr.Program()
    b = prog.global_block()
    x = b.create_var(name="x", shape=[-1, 4], dtype="float32", need_check_feed=True)
    b.append_op("relu", {"X": x}, {"Out": "out"})
    return prog


def test_each_executor_runs_on_its_own_stream(monkeypatch):
    from headrace.devices import cuda as dev
    seen = []
    to_host = dev.to_host

    def recording_to_host(value):
        seen.append(dev.current_stream())
        return to_host(value)

    monkeypatch.setattr(dev, "to_host", recording_to_host)
    a, b = hr.Executor(hr.CUDAPlace(0)), hr.Executor(hr.CUDAPlace(0))
    assert a._stream is not None and a._stream is not b._stream
    x = np.array([[-1, 2, -3, 4]], "float32")
    for exe in (a, b):
        (got,) = exe.run(_relu_program(), feed={"x": x}, fetch_list=["out"], scope=hr.Scope())
        np.testing.assert_array_equal(got, np.maximum(x, 0))
    assert seen == [a._stream, b._stream]
    # Outside a run, launches fall back to the default stream.
    assert dev.current_stream() is not a._stream and dev.current_stream() is not b._stream


def test_kernel_info_offers_the_current_stream():
    from headrace.devices import cuda as dev
    info = KernelInfo("relu", {}, hr.CUDAPlace(0))
    stream = dev.new_stream()
    with dev.use_stream(stream):
        assert info.stream is stream
    assert info.stream is not stream
    assert KernelInfo("relu", {}, hr.CPUPlace()).stream is None
