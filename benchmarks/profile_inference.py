"""Per-op times of bench_inference's networks beside ONNX Runtime's per-node profile: where a
whole-network ratio comes from.

The optimized headrace program runs under hr.profiler (each op's kernel call, wall clock) and
the exported model under ONNX Runtime with SessionOptions.enable_profiling (its nodes'
kernel_time), ``rounds`` runs each, one thread each (HEADRACE_BENCH_THREADS, as
bench_inference). Each op's figure is its minimum over the runs: on a shared machine the
medians swing with the load, the minimum is the op's time undisturbed. A conv's line names its
Filter shape, strides and whether it adds ResidualData; ONNX Runtime names its nodes by their
outputs and fuses differently (its shortcut conv does not add the residual: the conv before it
does), so compare sums over matching groups of ops.

    python benchmarks/profile_inference.py [mlp|lenet|resnet] [--batch 64] [--rounds 20]
"""
import _bench  # noqa: F401  (pins threads before NumPy loads)

import argparse
import collections
import json
import os
import tempfile

import numpy as np

import headrace as hr
from bench_inference import build, prepare


def _conv_line(op):
    if "conv" not in op.type:
        return ""
    filt = op.block.var(op.input("Filter")[0])
    res = bool(op.input("ResidualData")) if "ResidualData" in op.input_names else False
    return f"Filter {list(filt.shape)} strides {op.attr('strides')} residual {res}"


def headrace_ops(run, rounds):
    """``[(op index, type, description, min us, median us), ...]`` of the program ``run`` runs."""
    with open(os.devnull, "w") as quiet, \
            hr.profiler.profiler("CPU", file=quiet) as prof:
        for _ in range(rounds):
            run()
    ops = {instr.op.idx: instr.op for instr, *_ in prof.events}
    times = collections.defaultdict(list)
    for _, _, idx, _, dur, _ in prof.op_events():
        times[idx].append(dur / 1e3)
    return [(i, ops[i].type, _conv_line(ops[i]), min(t), float(np.median(t)))
            for i, t in sorted(times.items())]


def ort_nodes(onnx_path, x, rounds, where):
    """``[(node, op type, min us, median us), ...]`` in ONNX Runtime's order."""
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = int(_bench.THREADS)
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.enable_profiling = True
    opts.profile_file_prefix = os.path.join(where, "ort_profile")
    sess = ort.InferenceSession(onnx_path, opts, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    for _ in range(rounds):
        sess.run(None, {name: x})
    with open(sess.end_profiling()) as f:
        events = json.load(f)
    times, kinds = collections.defaultdict(list), {}
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            node = e["name"][:-len("_kernel_time")]
            times[node].append(e["dur"])
            kinds[node] = e["args"].get("op_name", "")
    return [(n, kinds[n], min(t), float(np.median(t))) for n, t in times.items()]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", default="resnet", choices=["mlp", "lenet", "resnet"])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as where:
        runs, _ = prepare(args.model, args.batch, where)
        ops = headrace_ops(runs["passes"], args.rounds)
        nodes = ort_nodes(os.path.join(where, "model.onnx"), build(args.model, args.batch)[4],
                          args.rounds, where)
    print(f"{args.model} batch {args.batch}, {args.rounds} runs, us (min / median)")
    for i, kind, what, lo, med in ops:
        print(f"headrace {i:3d} {kind:24s} {lo:9.1f} {med:9.1f}  {what}")
    print(f"headrace sum of minima {sum(o[3] for o in ops):9.1f}")
    for node, kind, lo, med in nodes:
        print(f"ort {node[:44]:44s} {kind:18s} {lo:9.1f} {med:9.1f}")
    print(f"ort sum of minima {sum(n[2] for n in nodes):9.1f}")


if __name__ == "__main__":
    main()
