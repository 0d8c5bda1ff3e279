"""Program construction and preparation speed.

- ir: a 200-layer fc-style network built through Block.append_op (mul + elementwise_add +
  relu, 600 ops, weights declared as parameters); build, serialize and parse times.
- fc: the same network through ``layers.fc`` (with ``mean``, 601 ops), then
  ``SGD.minimize`` (1603 ops); then the first training step (plan preparation included) and
  a steady step, batch 64. Beside it PyTorch constructing the same net (200 Linear+ReLU) and
  its first and steady SGD step, same run.

Each pass interleaves the frameworks; figures are the best over ``--repeat`` passes (the
machine is shared and loaded), wall time and (``cpu_``) the process's CPU time, printed as
one JSON line per mode.

    python benchmarks/bench_build.py [ir|fc ...] [--layers 200] [--repeat 5]
"""
import _bench  # noqa: F401  (pins threads before NumPy loads)

import argparse
import time

import numpy as np

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


def bench_ir(layers, repeat):
    t_build, prog = best(lambda: build(layers), repeat)
    t_ser, data = best(prog.serialize_to_string, repeat)
    t_parse, parsed = best(lambda: hr.Program.parse_from_string(data), repeat)
    assert parsed.serialize_to_string() == data
    n_ops = sum(len(b.ops) for b in prog.blocks)
    _bench.report("build_fc_program", layers=layers, ops=n_ops, bytes=len(data),
                  build_ms=round(t_build * 1e3, 2),
                  build_us_per_op=round(t_build * 1e6 / n_ops, 2),
                  serialize_ms=round(t_ser * 1e3, 3), parse_ms=round(t_parse * 1e3, 3))


class _Clock:
    """Wall and CPU time of consecutive phases (the machine is shared: CPU time shows what
    the process itself spent when other load stretches the wall clock)."""

    def __init__(self):
        self.wall, self.cpu, self._t = [], [], (time.perf_counter(), time.process_time())

    def lap(self):
        now = (time.perf_counter(), time.process_time())
        self.wall.append(now[0] - self._t[0])
        self.cpu.append(now[1] - self._t[1])
        self._t = now


def headrace_fc_pass(layers, width, feed):
    """(wall, cpu) lists of (build, minimize, first step, steady step) seconds, and the op
    count, of one fresh program."""
    clock = _Clock()
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup), hr.unique_name.guard():
        h = hr.layers.data("x", shape=[-1, width], dtype="float32")
        for _ in range(layers):
            h = hr.layers.fc(h, size=width, act="relu")
        loss = hr.layers.mean(h)
        clock.lap()
        hr.optimizer.SGD(learning_rate=0.01).minimize(loss)
    clock.lap()
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    clock.lap()   # not reported: the startup program
    exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
    clock.lap()
    steady_wall = steady_cpu = float("inf")
    for _ in range(5):
        exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
        clock.lap()
        steady_wall, steady_cpu = min(steady_wall, clock.wall[-1]), min(steady_cpu, clock.cpu[-1])
    wall = clock.wall[:2] + [clock.wall[3], steady_wall]
    cpu = clock.cpu[:2] + [clock.cpu[3], steady_cpu]
    return wall, cpu, len(main.global_block().ops)


def torch_fc_pass(torch, layers, width, x):
    """(construct s, first step s, steady step s) of the same net in PyTorch eager."""
    nn = torch.nn
    t0 = time.perf_counter()
    mods = []
    for _ in range(layers):
        mods += [nn.Linear(width, width), nn.ReLU()]
    net = nn.Sequential(*mods)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    t1 = time.perf_counter()

    def step():
        opt.zero_grad()
        loss = net(x).mean()
        loss.backward()
        opt.step()
        return loss.item()
    step()
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1, _bench.best_time(step, repeat=5, warmup=1)


def bench_fc(layers, repeat, width=64, batch=64):
    xs = np.random.default_rng(0).standard_normal((batch, width)).astype(np.float32)
    torch = _bench.torch_or_none()
    walls, cpus, pt_runs = [], [], []
    for _ in range(repeat):
        wall, cpu, n_ops = headrace_fc_pass(layers, width, {"x": xs})
        walls.append(wall)
        cpus.append(cpu)
        if torch is not None:
            pt_runs.append(torch_fc_pass(torch, layers, width, torch.from_numpy(xs)))
    figures = {"layers": layers, "ops": n_ops, "batch": batch}
    for label, runs in (("", walls), ("cpu_", cpus)):
        build_s, minimize_s, first_s, steady_s = (min(c) for c in zip(*runs))
        both_s = min(b + m for b, m, *_ in runs)
        figures.update({
            f"{label}build_ms": round(build_s * 1e3, 1),
            f"{label}minimize_ms": round(minimize_s * 1e3, 1),
            f"{label}build_minimize_ms": round(both_s * 1e3, 1),
            f"{label}first_step_ms": round(first_s * 1e3, 2),
            f"{label}steady_step_ms": round(steady_s * 1e3, 3),
            f"{label}first_to_steady": round(first_s / steady_s, 2)})
    if pt_runs:
        construct, first, steady = (min(c) for c in zip(*pt_runs))
        both_s = min(b + m for b, m, *_ in walls)
        figures.update(torch_construct_ms=round(construct * 1e3, 1),
                       torch_first_step_ms=round(first * 1e3, 2),
                       torch_steady_step_ms=round(steady * 1e3, 3),
                       ratio_build_minimize_to_torch_construct=round(both_s / construct, 2))
    _bench.report("build_and_prepare_fc", **figures)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("modes", nargs="*", help="ir, fc (default: both)")
    ap.add_argument("--layers", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    args.modes = args.modes or ["ir", "fc"]
    if set(args.modes) - {"ir", "fc"}:
        ap.error(f"unknown modes {sorted(set(args.modes) - {'ir', 'fc'})}: choose ir, fc")
    hr.ops.default_registry()  # plugin discovery is a one-time cost, not part of building
    if "ir" in args.modes:
        bench_ir(args.layers, args.repeat)
    if "fc" in args.modes:
        bench_fc(args.layers, args.repeat)


if __name__ == "__main__":
    main()
