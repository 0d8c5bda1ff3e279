"""Parameters loaded from files and folded by the passes start on a 64-byte boundary
(runtime.host_memory.empty_aligned): the kernels' vector loads of a weight that NumPy placed
16 or 32 bytes past a cache line straddled two lines each (the batch-1 MLP's run took 16%
longer, varying from process to process with where malloc put the weights)."""
import numpy as np
import pytest

import headrace as hr
from headrace.runtime.host_memory import ALIGN, empty_aligned


def _address(a):
    return a.__array_interface__["data"][0]


@pytest.mark.parametrize("shape, dtype", [((784, 256), "float32"), ((3,), "float64"),
                                          ((), "int64"), ((0, 5), "float32"),
                                          ((7, 3, 5), ">f4")])
def test_empty_aligned_is_a_c_contiguous_array_on_a_64_byte_boundary(shape, dtype):
    for _ in range(8):   # wherever the allocator puts the buffer
        a = empty_aligned(shape, dtype)
        assert a.shape == shape and a.dtype == np.dtype(dtype)
        assert a.flags.c_contiguous and a.flags.writeable and a.flags.aligned
        assert _address(a) % ALIGN == 0 or a.size == 0   # (an empty array has no data)
        a[...] = 1
        assert (a == 1).all()


def test_loaded_and_folded_parameters_are_aligned(tmp_path):
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        img = hr.layers.data("img", shape=[-1, 3, 6, 6], dtype="float32")
        h = hr.layers.conv2d(img, num_filters=5, filter_size=3, padding=1)
        h = hr.layers.batch_norm(h, act="relu", is_test=True)
        logits = hr.layers.fc(h, size=7, act="relu")
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    x = np.random.default_rng(0).standard_normal((2, 3, 6, 6)).astype("float32")
    want = exe.run(main, feed={"img": x}, fetch_list=[logits], scope=scope)[0]
    hr.io.save_inference_model(str(tmp_path), ["img"], [logits], exe, main, scope=scope)
    for optimize in (False, True):   # as loaded; after the passes (batch_norm folded)
        s = hr.Scope()
        prog, feeds, targets = hr.io.load_inference_model(str(tmp_path), exe, scope=s,
                                                          optimize=optimize)
        params = [v.name for v in prog.global_block().vars.values()
                  if v.persistable and v.kind == "lod_tensor" and s.find(v.name) is not None]
        assert len(params) >= 4
        assert optimize == any("@fold" in n for n in params)
        for name in params:
            assert _address(np.asarray(s.find(name).data)) % ALIGN == 0, name
        got = exe.run(prog, feed={"img": x}, fetch_list=targets, scope=s)[0]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
