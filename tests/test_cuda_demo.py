"""The demo network on CUDAPlace (issue 11): trained a few steps from the same initial values
as on the CPU, the losses agree to 1e-4 relative; the model saved from the device loads on the
CPU and predicts what the device predicted. Small batches keep Numba's simulator fast."""
import numpy as np
import pytest

import headrace as hr
from headrace import demo

pytestmark = pytest.mark.cuda

STEPS, BATCH = 2, 1


def _copy_scope(scope, names):
    fresh = hr.Scope()
    for n in names:
        fresh.set(n, hr.Tensor(np.array(scope.find(n).data, copy=True)))
    return fresh


def test_the_demo_trains_on_cuda_as_on_the_cpu(tmp_path):
    x, y, x_test, y_test = demo.load_digits()
    main, startup, test_program, loss, _, logits = demo.build(seed=1)
    cpu = hr.Executor(hr.CPUPlace())
    cpu_scope = hr.Scope()
    cpu.run(startup, scope=cpu_scope)   # one initialization, shared by both runs
    names = [v.name for v in main.list_vars() if v.persistable]
    gpu_scope = _copy_scope(cpu_scope, [n for n in names if cpu_scope.find(n) is not None])
    gpu = hr.Executor(hr.CUDAPlace(0))
    rng = np.random.default_rng(0)
    for step in range(STEPS):
        b = rng.choice(len(x), BATCH, replace=False)
        feed = {"img": x[b], "label": y[b]}
        (want,) = cpu.run(main, feed=feed, fetch_list=[loss], scope=cpu_scope)
        (got,) = gpu.run(main, feed=feed, fetch_list=[loss], scope=gpu_scope)
        np.testing.assert_allclose(got, want, rtol=1e-4, err_msg=f"loss at step {step}")
    # The test program keeps the loss and accuracy ops, so it reads the labels too.
    (on_device,) = gpu.run(test_program, feed={"img": x_test[:BATCH], "label": y_test[:BATCH]},
                           fetch_list=[logits], scope=gpu_scope)
    hr.io.save_inference_model(str(tmp_path), ["img"], [logits], gpu, main_program=test_program,
                               scope=gpu_scope)
    loaded = hr.Scope()
    program, feeds, fetches = hr.io.load_inference_model(str(tmp_path), cpu, scope=loaded)
    (on_cpu,) = cpu.run(program, feed={feeds[0]: x_test[:BATCH]}, fetch_list=fetches,
                        scope=loaded)
    np.testing.assert_allclose(on_cpu, on_device, rtol=1e-4, atol=1e-5)
