"""Crash fuzzing: mutated programs, model files, feeds and attributes, each run in a worker
process so that a crash (a signal) or a hang is caught and reported with its input.

The property for every case: parsing, loading and running either succeed or raise a
:class:`~headrace.errors.HeadraceError`; never an interpreter crash, a hang, or another
exception. ``run_cases(kind, seed, n)`` drives a worker (``python -m
headrace.testing.crashfuzz``) that runs the cases one after another and reports each; when the
worker dies or stops answering, the case it was running is the culprit, and it is returned
(its bytes, for a reproduction) rather than lost with the process. The tests run a few hundred
cases; ``pytest -m fuzz`` (``tox -e fuzz``) runs tens of thousands.
"""
import base64
import json
import os
import random
import selectors
import subprocess
import sys
import time
from typing import NamedTuple

import numpy as np

__all__ = ["run_cases", "Failure"]

HANG_SECONDS = 10.0


class Failure(NamedTuple):
    """A case that broke the property: ``what`` (crash, hang, or the exception's type and
    message), the case number and its input (base64 of the program or file bytes)."""
    kind: str
    case: int
    what: str
    data: str


# -- the seed programs ----------------------------------------------------------------------------

def _programs():
    """Small programs over the op families a user builds (name -> (main, startup, feeds))."""
    import headrace as hr
    from headrace import layers
    out = {}

    def build(name, fn):
        main, startup = hr.Program(), hr.Program()
        startup.random_seed = main.random_seed = 7
        with hr.program_guard(main, startup):
            feeds = fn()
        out[name] = (main, startup, feeds)

    def mlp():
        x = layers.data("x", shape=[6], dtype="float32")
        y = layers.data("y", shape=[1], dtype="int64")
        h = layers.fc(layers.fc(x, 8, act="relu"), 3, act="softmax")
        loss = layers.mean(layers.cross_entropy(h, y))
        hr.optimizer.SGD(0.1).minimize(loss)
        return {"x": ((-1, 6), "float32"), "y": ((-1, 1), "int64")}

    def conv():
        x = layers.data("img", shape=[1, 8, 8], dtype="float32")
        c = layers.conv2d(x, 2, 3, padding=1, act="relu")
        p = layers.pool2d(c, 2, pool_stride=2)
        layers.mean(layers.batch_norm(p))
        return {"img": ((-1, 1, 8, 8), "float32")}

    def loop():
        i = layers.fill_constant([1], "int64", 0)
        n = layers.data("n", shape=[1], dtype="int64", append_batch_size=False)
        x = layers.data("v", shape=[4], dtype="float32", append_batch_size=False)
        layers.while_loop(lambda i, x: layers.less_than(i, n),
                          lambda i, x: [layers.increment(i), layers.scale(x, 1.5)], [i, x])
        return {"n": ((1,), "int64"), "v": ((4,), "float32")}

    def seq():
        w = layers.data("w", shape=[1], dtype="int64", lod_level=1)
        e = layers.embedding(w, size=[10, 4])
        layers.sequence_pool(layers.fc(e, 4), "max")
        return {"w": ((-1, 1), "int64", 1)}

    for name, fn in (("mlp", mlp), ("conv", conv), ("loop", loop), ("seq", seq)):
        build(name, fn)
    return out


# -- mutations ------------------------------------------------------------------------------------

_INTS = [0, 1, -1, 2, 7, 2**31 - 1, -2**31, 2**40, -(2**40)]
_FLOATS = [0.0, -1.0, 1e30, -1e30, float("nan"), float("inf"), 1e-45]


def _mutate_desc(rng, desc, names):
    """One structure-aware change to a ProgramDesc (in place); returns what it did."""
    from headrace.proto import framework_pb2 as pb
    blocks = list(desc.blocks)
    block = rng.choice(blocks)
    ops = list(block.ops)
    choice = rng.randrange(7)
    if choice == 0 and ops:   # rebind an argument
        op = rng.choice(ops)
        slots = list(op.inputs) + list(op.outputs)
        if slots:
            s = rng.choice(slots)
            if s.arguments:
                s.arguments[rng.randrange(len(s.arguments))] = rng.choice(
                    names + ["@EMPTY@", "nope", names[0] + "@GRAD"])
            return "rebind"
    if choice == 1 and ops:   # change an attribute's value
        op = rng.choice(ops)
        attrs = [a for a in op.attrs if a.name not in ("op_callstack",)]
        if attrs:
            a = rng.choice(attrs)
            if a.type == pb.INT:
                a.i = rng.choice(_INTS[:7])
            elif a.type == pb.LONG:
                a.l = rng.choice(_INTS)
            elif a.type == pb.FLOAT:
                a.f = rng.choice(_FLOATS)
            elif a.type == pb.BOOLEAN:
                a.b = not a.b
            elif a.type == pb.INTS:
                del a.ints[:]
                a.ints.extend(rng.choice(_INTS[:7]) for _ in range(rng.randrange(5)))
            elif a.type == pb.STRING:
                a.s = rng.choice(["", "max", "NCHW", "\x00", "x" * 300])
            elif a.type == pb.BLOCK:
                a.block_idx = rng.randrange(-1, len(blocks) + 1)
            return "attr"
    if choice == 2 and block.vars:   # change a variable's declaration
        v = rng.choice(list(block.vars))
        t = v.type.lod_tensor.tensor if v.type.HasField("lod_tensor") else None
        if t is not None:
            what = rng.randrange(3)
            if what == 0:
                del t.dims[:]
                t.dims.extend(rng.choice([-1, 0, 1, 3, 2**40]) for _ in range(rng.randrange(5)))
            elif what == 1:   # (99: no such type; the closed enum refuses it, as a file can't)
                t.data_type = rng.choice([0, 1, 2, 3, 4, 5, 6, 20, 21, 22])
            else:
                v.type.lod_tensor.lod_level = rng.choice([0, 1, 2, 7])
            return "var"
    if choice == 3 and ops:   # delete, duplicate or move an op
        i = rng.randrange(len(ops))
        op = pb.OpDesc()
        op.CopyFrom(block.ops[i])
        del block.ops[i]
        if rng.random() < 0.7:
            block.ops.insert(rng.randrange(len(block.ops) + 1), op)
            if rng.random() < 0.5:
                block.ops.insert(rng.randrange(len(block.ops) + 1), op)
        return "ops"
    if choice == 4 and ops:   # another op type
        rng.choice(ops).type = rng.choice(
            ["relu", "mul", "sum", "concat", "while", "conditional_block", "reshape2", "mean",
             "softmax", "lookup_table", "sequence_pool", "write_to_array", "fill_constant"])
        return "type"
    return "bytes"   # the caller flips bytes of the serialized program instead


def _flip(rng, data):
    b = bytearray(data)
    for _ in range(rng.randrange(1, 4)):
        if b:
            b[rng.randrange(len(b))] = rng.randrange(256)
    return bytes(b)


def _feed(rng, program, feeds):
    out = {}
    for name, spec in feeds.items():
        shape, dtype, lod = spec if len(spec) == 3 else (*spec, 0)
        shape = [rng.randrange(0, 4) if d == -1 else d for d in shape]
        if rng.random() < 0.1:   # a wrong dtype or shape now and then
            dtype = rng.choice(["float64", "int32", "bool"])
        if rng.random() < 0.1:
            shape = shape[:-1] or [3]
        if dtype.startswith("int"):
            value = np.random.default_rng(rng.randrange(2**32)).integers(0, 5, shape)
        else:
            value = np.random.default_rng(rng.randrange(2**32)).standard_normal(shape)
        value = value.astype(dtype)
        if lod and value.ndim and rng.random() < 0.9:
            from headrace.runtime.tensor import Tensor
            n = value.shape[0]
            cut = sorted(rng.randrange(n + 1) for _ in range(rng.randrange(3)))
            value = Tensor(value, [[0, *cut, n]])
        out[name] = value
    return out


# -- the worker ---------------------------------------------------------------------------------

def _worker(kind, seed, n, first):
    """Run cases ``first .. n-1``: print ``S i`` before each and ``B i json`` for a broken
    property (an exception other than a HeadraceError); the parent watches."""
    import tempfile

    import headrace as hr
    import headrace.io as hio
    from headrace.errors import HeadraceError
    from headrace.proto import framework_pb2 as pb
    progs = _programs()
    keys = sorted(progs)
    tmp = tempfile.mkdtemp(prefix="hrfuzz-")
    base_models = {}
    for i in range(first, n):
        rng = random.Random(f"{kind}:{seed}:{i}")
        name = rng.choice(keys)
        main, startup, feeds = progs[name]
        case = None
        try:
            if kind == "program":
                desc = pb.ProgramDesc()
                desc.ParseFromString(main.serialize_to_string())
                names = sorted({v.name for b in desc.blocks for v in b.vars})
                how = _mutate_desc(rng, desc, names)
                case = desc.SerializeToString()
                if how == "bytes" or rng.random() < 0.2:
                    case = _flip(rng, case)
            else:
                if name not in base_models:
                    d = os.path.join(tmp, name)
                    exe, scope = hr.Executor(), hr.Scope()
                    exe.run(startup, scope=scope)
                    targets = [main.global_block().ops[-1].output_arg_names[0]]
                    hio.save_inference_model(d, list(feeds), [main.global_block().var(t)
                                                               for t in targets], exe, main,
                                             params_filename="__params__", scope=scope)
                    base_models[name] = {f: open(os.path.join(d, f), "rb").read()
                                         for f in ("__model__", "__params__")}
                which = rng.choice(["__model__", "__params__", "__params__"])
                files = dict(base_models[name])
                if which == "__model__" and rng.random() < 0.6:
                    desc = pb.ProgramDesc()
                    desc.ParseFromString(files[which])
                    names = sorted({v.name for b in desc.blocks for v in b.vars})
                    _mutate_desc(rng, desc, names)
                    files[which] = desc.SerializeToString()
                else:
                    files[which] = _flip(rng, files[which]) if rng.random() < 0.7 else \
                        files[which][:rng.randrange(len(files[which]) + 1)]
                case = json.dumps({k: base64.b64encode(v).decode() for k, v in files.items()})
            raw = case if isinstance(case, bytes) else case.encode()
            print(f"S {i} {base64.b64encode(raw).decode()}", flush=True)
            if kind == "program":
                prog = hr.Program.parse_from_string(case)
                exe, scope = hr.Executor(), hr.Scope()
                exe.run(startup, scope=scope)
                fetch = [v for v in prog.global_block().vars.values()
                         if not v.persistable][-1:]
                exe.run(prog, feed=_feed(rng, prog, feeds), fetch_list=fetch, scope=scope)
            else:
                d = os.path.join(tmp, f"case{i}")
                os.makedirs(d, exist_ok=True)
                for f, v in files.items():
                    with open(os.path.join(d, f), "wb") as fh:
                        fh.write(v)
                exe, scope = hr.Executor(), hr.Scope()
                prog, feed_names, targets = hio.load_inference_model(
                    d, exe, params_filename="__params__", scope=scope)
                exe.run(prog, feed=_feed(rng, prog, feeds), fetch_list=targets, scope=scope)
            outcome = "ran"
        except HeadraceError:
            outcome = "refused"
        except Exception as e:   # noqa: BLE001 (the property: only HeadraceErrors)
            import traceback
            where = traceback.extract_tb(e.__traceback__)[-1]
            print(f"B {i} " + json.dumps(f"{type(e).__name__}: {str(e)[:300]} (at "
                                         f"{os.path.basename(where.filename)}:{where.lineno})"),
                  flush=True)
            outcome = "broke"
        print(f"D {i} {outcome}", flush=True)


def run_cases(kind, seed, n, hang=HANG_SECONDS, stats=None):
    """Run ``n`` cases of ``kind`` ("program" or "model") in worker processes; returns the
    :class:`Failure` list (a crashed or hung worker is restarted after the culprit).
    ``stats``: a dict counting the outcomes ("ran", "refused", "broke")."""
    failures, first = [], 0
    stats = {} if stats is None else stats
    # A mutated loop often never ends: the step guard (configurable for exactly this) stops
    # it in about a second here rather than after the default million steps.
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               HEADRACE_MAX_WHILE_STEPS="50000")
    while first < n:
        p = subprocess.Popen([sys.executable, "-m", "headrace.testing.crashfuzz", kind,
                              str(seed), str(n), str(first)], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, env=env, bufsize=1)
        current, data, deadline = None, "", None
        sel = selectors.DefaultSelector()
        sel.register(p.stdout, selectors.EVENT_READ)
        while True:
            wait = None if current is None else max(0.0, deadline - time.monotonic())
            ready = sel.select(timeout=wait if current is not None else 60)
            if not ready:
                if current is not None:   # no answer for `hang` seconds: a hang
                    p.kill()
                    p.wait()
                    failures.append(Failure(kind, current, f"hang (> {hang:.0f} s)", data))
                    first = current + 1
                    break
                continue
            line = p.stdout.readline()
            if not line:   # the worker ended: finished, or died in `current`
                rc = p.wait()
                if current is not None:
                    failures.append(Failure(kind, current, f"crash (exit {rc})", data))
                    first = current + 1
                else:
                    first = n
                break
            tag, rest = line[0], line[2:].rstrip("\n")
            if tag == "S":
                i, data = rest.split(" ", 1)
                current, deadline = int(i), time.monotonic() + hang
            elif tag == "B":
                i, what = rest.split(" ", 1)
                failures.append(Failure(kind, int(i), json.loads(what), data))
            elif tag == "D":
                current = None
                outcome = rest.split(" ", 1)[1]
                stats[outcome] = stats.get(outcome, 0) + 1
        sel.close()
    return failures


if __name__ == "__main__":
    import warnings
    warnings.simplefilter("ignore")
    _worker(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
