"""What the scripts that have PaddlePaddle write inference-model fixtures share: each fixture
is a directory with ``model.pdmodel``, ``model.pdiparams``, ``io.npz`` (``<run>/in:<feed
name>`` and ``<run>/out:<k>`` arrays: two runs with fed inputs and Paddle's outputs) and
``ops.txt`` (the op types). Imported by the scripts beside it; needs Paddle."""
import argparse
import pathlib
import zlib

import numpy as np
import paddle


def write(name, build, out_dir):
    """Build ``build()`` -> (feeds, fetches, feed_fn(rng)) in a fresh program, save it as the
    fixture ``out_dir/name`` with two runs' inputs and outputs."""
    paddle.seed(1)
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        feeds, fetches, feed_fn = build()
    exe = paddle.static.Executor(paddle.CPUPlace())
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        where = out_dir / name
        where.mkdir(parents=True, exist_ok=True)
        paddle.static.save_inference_model(str(where / "model"), feeds, fetches, exe,
                                           program=main)
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        arrays = {}
        for run in range(2):
            feed = {k: v.astype(np.float32) if v.dtype == np.float64 else v
                    for k, v in feed_fn(rng).items()}
            got = exe.run(main, feed=feed, fetch_list=fetches)
            arrays.update({f"{run}/in:{k}": v for k, v in feed.items()})
            arrays.update({f"{run}/out:{k}": np.asarray(v) for k, v in enumerate(got)})
        np.savez(where / "io.npz", **arrays)
        types = sorted({op.type for op in main.global_block().ops})
        (where / "ops.txt").write_text("\n".join(types) + "\n")


def main(programs, default_out, description):
    """The scripts' command line: ``--out DIR`` (default ``default_out``), every program."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--out", default=str(default_out))
    args = parser.parse_args()
    paddle.enable_static()
    out_dir = pathlib.Path(args.out)
    for name, build in programs.items():
        write(name, build, out_dir)
        print("wrote", out_dir / name)
