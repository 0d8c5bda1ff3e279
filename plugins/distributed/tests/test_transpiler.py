"""The data-parallel rewrite as a program (no MPI needed): what goes where."""
import pytest

import headrace as hr
import headrace_distributed as dist
from headrace.errors import LayerError


def _program(with_bn=False):
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = hr.layers.data("x", shape=[-1, 1, 4, 4], dtype="float32")
        y = hr.layers.data("y", shape=[-1, 1], dtype="int64")
        h = hr.layers.conv2d(x, num_filters=2, filter_size=3, padding=1)
        if with_bn:
            h = hr.layers.batch_norm(h)
        logits = hr.layers.fc(h, size=3)
        loss = hr.layers.mean(hr.layers.softmax_with_cross_entropy(logits, y))
        hr.optimizer.SGD(0.1).minimize(loss)
    return main, startup


def _types(program):
    return [op.type for op in program.global_block().ops]


def test_broadcast_then_bucketed_reduction_before_the_updates():
    main, startup = _program()
    params = [p.name for p in main.all_parameters()]
    dist.transpile(main, startup, nranks=4, bucket_size_mb=25, check=False)
    bcast = [op for op in startup.global_block().ops if op.type == "c_broadcast"]
    assert sorted(op.input("X")[0] for op in bcast) == sorted(params)
    assert all(op.attr("root") == 0 for op in bcast)
    types = _types(main)
    # The loss gradient carries 1/nranks (Paddle's scale of the loss gradient).
    seed = types.index("fill_constant")
    assert types[seed + 1] == "scale"
    assert main.global_block().ops[seed + 1].attr("scale") == pytest.approx(0.25)
    first_update = types.index("sgd")
    assert types.count("coalesce_tensor") == 1 and types.count("c_allreduce_sum") == 1
    assert types.index("coalesce_tensor") < types.index("c_allreduce_sum") \
        < types.index("split") < first_update
    assert types.count("reshape2") == len(params)
    assert types[first_update:].count("sgd") == len(params)


def test_one_reduction_per_gradient_and_small_buckets():
    main, startup = _program()
    dist.transpile(main, startup, nranks=2, bucket_size_mb=0, check=False)
    n = len(main.all_parameters())
    assert _types(main).count("c_allreduce_sum") == n and "coalesce_tensor" not in _types(main)
    main, startup = _program()
    # Buckets of ~100 bytes: the 2x1x3x3 filter (72 bytes) and its bias share one, the fc
    # weight (32x3 floats) gets its own, its bias another.
    dist.transpile(main, startup, nranks=2, bucket_size_mb=1e-4, check=False)
    assert _types(main).count("coalesce_tensor") == 3


def test_sync_batch_norm_and_refusals():
    main, startup = _program(with_bn=True)
    assert dist.use_sync_batch_norm(main) == 2          # batch_norm and batch_norm_grad
    assert "batch_norm" not in _types(main) and "sync_batch_norm_grad" in _types(main)
    bare, bare_startup = hr.Program(), hr.Program()
    with hr.program_guard(bare, bare_startup):
        hr.layers.fc(hr.layers.data("x", shape=[-1, 2], dtype="float32"), size=2)
    with pytest.raises(LayerError, match="no backward pass|no trainable parameter"):
        dist.transpile(bare, bare_startup, nranks=2, check=False)
    with pytest.raises(LayerError, match="bucket_size_mb"):
        dist.transpile(main, startup, nranks=2, bucket_size_mb=-1, check=False)
