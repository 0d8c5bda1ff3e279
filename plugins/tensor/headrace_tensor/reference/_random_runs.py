"""A random op's program and its runs, and the shape-tensor check, shared by the CPU and CUDA
tests of uniform_random and gaussian_random (a private module: reference discovery skips it)."""
import numpy as np

import headrace
from headrace.runtime import Executor, Scope


def random_program(op_type, op_seed=0, program_seed=0, shape=(4, 5)):
    """One ``op_type`` op into a float32 "out" of ``shape``, with the op's and the program's
    seeds."""
    prog = headrace.Program()
    prog.random_seed = program_seed
    block = prog.global_block()
    block.create_var(name="out", shape=shape, dtype="float32")
    block.append_op(op_type, {}, {"Out": "out"}, {"shape": list(shape), "seed": op_seed})
    return prog


def runs(prog, n=3, exe=None, place=None):
    """"out" of ``n`` runs of ``prog`` by one executor (``exe``, else a new one on ``place``,
    else on the default place), each in a fresh scope."""
    if exe is None:
        exe = Executor() if place is None else Executor(place)
    return [exe.run(prog, fetch_list=["out"], scope=Scope())[0] for _ in range(n)]


def check_shape_tensors(draw):
    """The output shape from ShapeTensor (a 0 dim included) and from ShapeTensorList (over an
    attribute with -1); ``draw(op_type, attrs, inputs)`` runs one op on a device and returns
    Out as a NumPy array."""
    x = draw("uniform_random", {"shape": [], "seed": 1},
             {"ShapeTensor": np.array([3, 0, 2], "int64")})
    assert x.shape == (3, 0, 2)
    x = draw("gaussian_random", {"shape": [-1, 2], "seed": 1},
             {"ShapeTensorList": [np.array([4], "int32"), np.array([2], "int32")]})
    assert x.shape == (4, 2)


def check_seeded_sequences(runs, op_type, op_seed, program_seed):
    """A seeded op draws the same sequence in two executors (two kernels made from the same
    seed), and new numbers at each run of one executor; ``runs(prog, n)`` runs a program on a
    device. Returns the first executor's draws."""
    prog = random_program(op_type, op_seed, program_seed)
    first, again = runs(prog, 3), runs(prog, 3)
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], first[1]) and not np.array_equal(first[1], first[2])
    return first
