"""Inference beside ONNX Runtime: the same network and weights, one thread each, interleaved.

- mlp:    784-256-256-10, relu
- lenet:  1x28x28, conv5x5(20)+relu+maxpool2, conv5x5(50)+relu+maxpool2, fc500+relu, fc10
          (bench_train.build's networks)
- resnet: 3x32x32, conv3x3(16)+batch_norm+relu, two residual blocks (conv3x3+bn+relu,
          conv3x3+bn, + shortcut, relu) at 16 channels, a stride-2 block to 32 channels (1x1
          conv + bn shortcut), global average pool, fc10 (bench_resnet.network)

Each network is built and initialized in headrace (batch_norm with non-trivial statistics),
saved with save_inference_model, loaded twice (optimize=False: the program as saved;
optimize=True: after headrace.passes), and exported with hr.onnx.export for ONNX Runtime
(intra_op_num_threads = HEADRACE_BENCH_THREADS, default 1; inter_op 1, sequential; its
default graph optimizations, all). Per
round each of the three runs ``number`` calls in turn; the figure is the median over rounds
of the per-call time (wall clock; then CPU time, cpu_*, in 9 more rounds). Outputs are checked
to agree before timing.

    python benchmarks/bench_inference.py [mlp|lenet|resnet ...] [--batches 1,64]
"""
import _bench  # noqa: F401  (pins threads before NumPy loads)

import sys
import tempfile

import numpy as np

import headrace as hr
from bench_resnet import network as resnet
from bench_train import build as build_train


def build(model, batch):
    """``(main, startup, feed name, logits, input)`` of the network."""
    rng = np.random.default_rng(0)
    if model in ("mlp", "lenet"):
        main, startup, loss, feed = build_train(model, batch)
        op = next(op for op in main.global_block().ops
                  if op.type == "softmax_with_cross_entropy")
        logits = main.global_block().var(op.input("Logits")[0])
        return main, startup, "x", logits, feed["x"]
    main, startup = hr.Program(), hr.Program()
    startup.random_seed = 1
    with hr.program_guard(main, startup):
        logits = resnet()
    return main, startup, "x", logits, rng.standard_normal((batch, 3, 32, 32)).astype("f4")


def _statistics(program, scope, rng):
    """batch_norm as after training: statistics and affine parameters away from 0/1."""
    for op in program.global_block().ops:
        if op.type == "batch_norm":
            for slot, lo, hi in (("Scale", 0.5, 1.5), ("Bias", -0.2, 0.2),
                                 ("Mean", -0.1, 0.1), ("Variance", 0.5, 1.5)):
                name = op.input(slot)[0]
                shape = np.asarray(scope.find(name).data).shape
                scope.set(name, hr.Tensor(rng.uniform(lo, hi, shape).astype("float32")))


def prepare(model, batch, where):
    """Three callables computing the logits of one batch: headrace plain and optimized, ORT;
    plus the number of ops in each headrace program."""
    import onnxruntime as ort
    main, startup, feed_name, logits, x = build(model, batch)
    exe, scope = hr.Executor(hr.CPUPlace()), hr.Scope()
    exe.run(startup, scope=scope)
    _statistics(main, scope, np.random.default_rng(1))
    hr.io.save_inference_model(where, [feed_name], [logits], exe, main, scope=scope)
    runs, sizes = {}, {}
    for label, optimize in (("plain", False), ("passes", True)):
        s = hr.Scope()
        prog, feeds, targets = hr.io.load_inference_model(where, exe, scope=s,
                                                          optimize=optimize)
        sizes[label] = len(prog.global_block().ops) - 2     # feed and fetch
        runs[label] = (lambda p=prog, t=targets, s=s:
                       exe.run(p, feed={feed_name: x}, fetch_list=t, scope=s)[0])
    onnx_path = where + "/model.onnx"
    load_scope = hr.Scope()
    plain, feeds, targets = hr.io.load_inference_model(where, exe, scope=load_scope,
                                                       optimize=False)
    hr.onnx.export(plain, feeds, targets, onnx_path, scope=load_scope)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = int(_bench.THREADS)    # headrace's BLAS threads: the same
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    sess = ort.InferenceSession(onnx_path, opts, providers=["CPUExecutionProvider"])
    in_name = sess.get_inputs()[0].name
    runs["onnxruntime"] = lambda: sess.run(None, {in_name: x})[0]
    want = runs["onnxruntime"]()
    for label in ("plain", "passes"):
        got = runs[label]()
        if not np.allclose(got, want, rtol=1e-3, atol=1e-4):
            raise AssertionError(f"{model} b{batch}: headrace {label} differs from ONNX "
                                 f"Runtime by {np.abs(got - want).max()}")
    return runs, sizes


def bench(model, batch):
    with tempfile.TemporaryDirectory() as where:
        runs, sizes = prepare(model, batch, where)
        # About 0.2 s per run per round.
        one = min(_bench.interleaved({"x": runs["plain"]}, 1, warmup=2)[0]["x"][0], 1.0)
        number = max(1, int(0.05 / max(one, 1e-6)))
        wall, cpu = _bench.interleaved(runs, rounds=15, number=number, warmup=2)
        med, cpu = _bench.medians(wall), _bench.medians(cpu)
    ort_t = med["onnxruntime"]
    _bench.report(f"inference_{model}_b{batch}", ops_plain=sizes["plain"],
                  ops_passes=sizes["passes"],
                  headrace_plain_us=round(med["plain"] * 1e6, 1),
                  headrace_passes_us=round(med["passes"] * 1e6, 1),
                  onnxruntime_us=round(ort_t * 1e6, 1),
                  ratio_plain=round(med["plain"] / ort_t, 2),
                  ratio_passes=round(med["passes"] / ort_t, 2),
                  cpu_passes_us=round(cpu["passes"] * 1e6, 1),
                  cpu_onnxruntime_us=round(cpu["onnxruntime"] * 1e6, 1),
                  cpu_ratio_passes=round(cpu["passes"] / cpu["onnxruntime"], 2))


if __name__ == "__main__":
    args = sys.argv[1:]
    batches = [1, 64]
    if "--batches" in args:
        i = args.index("--batches")
        batches = [int(b) for b in args[i + 1].split(",")]
        del args[i:i + 2]
    for m in args or ["mlp", "lenet", "resnet"]:
        for b in batches:
            bench(m, b)
