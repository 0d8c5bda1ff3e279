"""Program construction speed: a 200-layer fc-style network built through the Python API.

Each layer is mul + elementwise_add + relu (600 ops), with its weight and bias declared as
parameters, as the fc layer builds them. Reports build, serialize and parse times (best of
--repeat) as one JSON line. No peer: this measures headrace's own IR layer.

    python benchmarks/bench_build.py [--layers 200] [--repeat 5]
"""
import _bench  # noqa: F401  (pins threads before NumPy loads)

import argparse
import time

import headrace as hr


def build(layers, width=64):
    prog = hr.Program()
    block = prog.global_block()
    x = block.create_var(name="x", shape=[-1, width], dtype="float32", need_check_feed=True)
    for i in range(layers):
        w = block.create_parameter(f"fc_{i}.w_0", [width, width])
        b = block.create_parameter(f"fc_{i}.b_0", [width])
        h = block.append_op("mul", {"X": x, "Y": w}, {"Out": f"fc_{i}.tmp_0"},
                            {"x_num_col_dims": 1, "y_num_col_dims": 1}).output("Out")[0]
        h = block.append_op("elementwise_add", {"X": h, "Y": b}, {"Out": f"fc_{i}.tmp_1"},
                            {"axis": 1}).output("Out")[0]
        x = block.append_op("relu", {"X": h}, {"Out": f"fc_{i}.tmp_2"}).output("Out")[0]
    return prog


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return min(times), result


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    hr.ops.default_registry()  # plugin discovery is a one-time cost, not part of building
    t_build, prog = best(lambda: build(args.layers), args.repeat)
    t_ser, data = best(prog.serialize_to_string, args.repeat)
    t_parse, parsed = best(lambda: hr.Program.parse_from_string(data), args.repeat)
    assert parsed.serialize_to_string() == data
    n_ops = sum(len(b.ops) for b in prog.blocks)
    _bench.report("build_fc_program", layers=args.layers, ops=n_ops, bytes=len(data),
                  build_ms=round(t_build * 1e3, 2),
                  build_us_per_op=round(t_build * 1e6 / n_ops, 2),
                  serialize_ms=round(t_ser * 1e3, 3), parse_ms=round(t_parse * 1e3, 3))


if __name__ == "__main__":
    main()
