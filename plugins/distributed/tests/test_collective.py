"""The collective ops on two ranks against references over both ranks' inputs, their
gradients by finite differences on one rank, and the error without mpi4py."""
import sys

import numpy as np
import pytest

import headrace as hr
from headrace.errors import HeadraceError
from headrace.ops import default_registry
from headrace.testing import check_grad, program_gradients
from headrace.testing.optest import run_op


def test_every_collective_and_sync_batch_norm_on_two_ranks(launch):
    rc, out, err = launch(2, "collective_worker.py")
    assert rc == 0, err[-3000:]
    assert sorted(line for line in out.splitlines() if line.endswith(": ok")) == \
        ["rank 0: ok", "rank 1: ok"]


@pytest.mark.parametrize("op_type, attrs", [("c_allreduce_sum", {}), ("c_identity", {}),
                                            ("c_allgather", {"nranks": 1}),
                                            ("c_reducescatter", {"nranks": 1})])
def test_gradients_on_one_rank(launch, op_type, attrs):
    # One rank: every collective is the identity, and so is each gradient (Paddle's makers:
    # allreduce_sum -> allreduce_sum, identity -> allreduce_sum, allgather <-> reducescatter).
    x = np.random.default_rng(0).standard_normal((4, 3))
    check_grad(op_type, {"X": x}, wrt=["X"], attrs=attrs)


def test_allreduce_sum_gradient_is_paddles():
    main = hr.Program()
    with hr.program_guard(main, hr.Program()):
        x = hr.layers.data("x", shape=[-1, 3], dtype="float64")
        x.stop_gradient = False
        y = main.global_block().create_var(name="y", dtype="float64")
        main.global_block().append_op("c_allreduce_sum", {"X": [x.name]}, {"Out": ["y"]},
                                      {"use_model_parallel": False})
        hr.gradients([hr.layers.mean(y)], [x])
    types = [op.type for op in main.global_block().ops]
    assert types.count("c_allreduce_sum") == 2          # the forward op and its gradient
    grad_op = [op for op in main.global_block().ops if op.type == "c_allreduce_sum"][1]
    assert grad_op.input("X") == ["y@GRAD"] and grad_op.output("Out") == ["x@GRAD"]


@pytest.mark.parametrize("layout, shape", [("NCHW", (4, 3, 2, 2)), ("NHWC", (3, 2, 2, 3))])
def test_sync_batch_norm_gradient_on_one_rank(launch, layout, shape):
    import headrace_distributed as dist
    main, startup = hr.Program(), hr.Program()
    rng = np.random.default_rng(2)
    with hr.program_guard(main, startup):
        x = hr.layers.data("x", shape=[-1, *shape[1:]], dtype="float64")
        x.stop_gradient = False
        y = hr.layers.batch_norm(x, data_layout=layout)
        w = hr.layers.assign(rng.standard_normal(shape))
        loss = hr.layers.reduce_sum(hr.layers.elementwise_mul(y, w))
        assert dist.use_sync_batch_norm(main) == 1
        wrt = [x] + [p for p in main.all_parameters() if p.trainable]
        hr.gradients([loss], wrt)
    types = [op.type for op in main.global_block().ops]
    assert "sync_batch_norm" in types and "sync_batch_norm_grad" in types
    assert "batch_norm" not in types
    wrt = [v.name for v in wrt]
    analytic, numeric = program_gradients(main, startup, loss, wrt,
                                          {"x": rng.standard_normal(shape) * 2 + 1})
    for name in wrt:
        np.testing.assert_allclose(analytic[name], numeric[name], rtol=1e-5, atol=1e-7,
                                   err_msg=name)


def test_without_mpi4py_ops_list_and_running_names_the_extra(monkeypatch):
    import headrace_distributed.comm as comm
    monkeypatch.setattr(comm, "_MPI", None)
    monkeypatch.setitem(sys.modules, "mpi4py", None)     # import mpi4py now fails
    assert default_registry().get("c_allreduce_sum").type == "c_allreduce_sum"
    with pytest.raises(HeadraceError, match=r"pip install headrace\[distributed\]"):
        run_op("c_allreduce_sum", {"X": np.ones(3)}, ["Out"])
