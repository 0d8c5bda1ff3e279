"""Program: a ProgramDesc and its blocks; the default programs and ``program_guard``."""
import contextlib

from ..errors import ProgramError, ProgramParseError
from ..ops.plugins import default_registry
from ..proto import framework_pb2 as pb
from .. import unique_name
from . import defaults, seeds
from .block import Block
from .operator import Operator
from .validate import validate_program_desc
from .variable import Parameter, Variable

__all__ = ["Program", "PROGRAM_VERSION", "default_main_program", "default_startup_program",
           "program_guard", "switch_main_program", "switch_startup_program",
           "OP_ROLE_FORWARD", "OP_ROLE_BACKWARD", "OP_ROLE_OPTIMIZE", "OP_ROLE_LRSCHED",
           "OP_ROLE_LOSS"]

# The program format version headrace writes (ProgramDesc.version). Paddle accepts programs
# whose version is not newer than its own, so a small number keeps ours loadable there.
PROGRAM_VERSION = 1

# op_role values (Paddle's): what an op is for; autodiff and optimizers set them. LRSched marks
# the learning-rate schedule (the step counter and the decay arithmetic); optimizers also or it
# with Optimize for per-parameter learning rates, as Paddle does.
OP_ROLE_FORWARD, OP_ROLE_BACKWARD, OP_ROLE_OPTIMIZE, OP_ROLE_LRSCHED, OP_ROLE_LOSS = \
    0, 1, 2, 16, 256


class Program:
    """A program: a flat list of nested blocks; block 0 is the global block.

    ``random_seed`` (0 = nondeterministic) seeds the random ops that carry no seed of their own:
    each gets a seed derived from it written into its ``seed`` attribute (framework/seeds.py),
    so the serialized program draws the same numbers in any process.
    ``registry`` is the op registry used to validate appended ops (default: the process one).
    """

    def __init__(self, registry=None):
        self.desc = pb.ProgramDesc()
        self.desc.version.version = PROGRAM_VERSION
        self.desc.op_version_map.SetInParent()  # Paddle writes an (empty) map; so do we
        self.blocks = []
        self.current_block_idx = 0
        self._random_seed = 0
        self._registry = registry
        self._revision = 0
        self._op_role = OP_ROLE_FORWARD
        self._new_block(-1)

    @property
    def random_seed(self):
        return self._random_seed

    @random_seed.setter
    def random_seed(self, seed):
        seed = seeds.check_random_seed(seed)
        if seed != self._random_seed:
            self._random_seed = seed
            seeds.reseed(self)

    # -- the registry ----------------------------------------------------------------------
    @property
    def registry(self):
        if self._registry is not None:
            return self._registry
        return default_registry()

    @property
    def revision(self):
        """Increases on every change; executors key cached plans on it."""
        return self._revision

    # -- blocks ----------------------------------------------------------------------------
    def _new_block(self, parent_idx):
        desc = self.desc.blocks.add()
        desc.idx = len(self.blocks)
        desc.parent_idx = parent_idx
        block = Block(self, desc)
        self.blocks.append(block)
        self._revision += 1
        return block

    def global_block(self):
        return self.blocks[0]

    def current_block(self):
        return self.blocks[self.current_block_idx]

    def block(self, index):
        """Block ``index``; an out-of-range index is a ProgramError."""
        if not isinstance(index, int) or not 0 <= index < len(self.blocks):
            raise ProgramError(f"block index {index!r} out of range: the program has "
                               f"{len(self.blocks)} blocks")
        return self.blocks[index]

    @property
    def num_blocks(self):
        return len(self.blocks)

    def create_block(self, parent_idx=None):
        """A new block whose parent is the current block (or ``parent_idx``); it becomes the
        current block until :meth:`rollback`."""
        parent = self.current_block_idx if parent_idx is None else self.block(parent_idx).idx
        block = self._new_block(parent)
        self.current_block_idx = block.idx
        return block

    def rollback(self):
        """Make the current block's parent current again."""
        parent = self.current_block().parent_idx
        if parent < 0:
            raise ProgramError("rollback() from the global block: no block to return to")
        self.current_block_idx = parent

    @contextlib.contextmanager
    def block_guard(self, parent_idx=None):
        """``with program.block_guard() as sub:`` creates a sub-block and rolls back after."""
        block = self.create_block(parent_idx)
        try:
            yield block
        finally:
            self.current_block_idx = block.parent_idx

    @contextlib.contextmanager
    def op_role_guard(self, role):
        """Ops appended inside get ``op_role`` = ``role`` (autodiff, optimizers)."""
        old, self._op_role = self._op_role, role
        try:
            yield
        finally:
            self._op_role = old

    # -- variables -------------------------------------------------------------------------
    def list_vars(self):
        """Every variable of every block, block by block."""
        for block in self.blocks:
            yield from block.vars.values()

    def all_parameters(self):
        return self.global_block().all_parameters()

    def create_parameter(self, name, shape, dtype="float32", trainable=True,
                         optimize_attr=None, regularizer=None, gradient_clip=None,
                         initializer=None, lod_level=None, init_attr=None):
        """``Block.create_parameter`` (parameters are global). ``init_attr`` is the seeds'
        spelling of an op-and-attributes initializer: ``init_attr={"type": "uniform_random",
        "min": -1.0, "max": 1.0}``."""
        if init_attr is not None:
            if initializer is not None:
                raise ProgramError(f"parameter '{name}': give initializer or init_attr, not both")
            initializer = init_attr
        return self.global_block().create_parameter(
            name, shape, dtype, trainable, optimize_attr, regularizer, gradient_clip,
            initializer, lod_level)

    def _unique_var_name(self, key):
        # Unique within the program, even across unique_name.guard() resets.
        blocks = self.blocks
        while True:
            name = unique_name.generate(key)
            for b in blocks:   # a plain loop: every temporary of a network is named here
                if name in b.vars:
                    break
            else:
                return name

    # -- serialization ---------------------------------------------------------------------
    def serialize_to_string(self):
        """The ProgramDesc's bytes (deterministic)."""
        return self.desc.SerializeToString(deterministic=True)

    @classmethod
    def parse_from_string(cls, data, registry=None):
        """A Program from ProgramDesc bytes (headrace's or Paddle's). Malformed bytes give a
        ProgramParseError. Ops and attributes unknown to the registry are kept as they are."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise ProgramParseError(f"expected bytes, got {type(data).__name__}")
        desc = pb.ProgramDesc()
        try:
            desc.ParseFromString(bytes(data))
        except Exception as e:  # DecodeError, RecursionError in malformed nesting, ...
            raise ProgramParseError(f"not a ProgramDesc: {type(e).__name__}: {e}") from None
        return cls.from_desc(desc, registry)

    @classmethod
    def from_desc(cls, desc, registry=None):
        """A Program wrapping (a copy of) a ProgramDesc message, validated."""
        validate_program_desc(desc)
        prog = cls.__new__(cls)
        prog.desc = pb.ProgramDesc()
        prog.desc.CopyFrom(desc)
        prog.blocks, prog.current_block_idx, prog._random_seed = [], 0, 0
        prog._registry, prog._revision, prog._op_role = registry, 0, OP_ROLE_FORWARD
        reg = prog.registry
        for bdesc in prog.desc.blocks:
            block = Block(prog, bdesc)
            prog.blocks.append(block)
            for vdesc in bdesc.vars:
                var = (Parameter._wrap(block, vdesc, trainable=None)
                       if vdesc.is_parameter else Variable._wrap(block, vdesc))
                block.vars[vdesc.name] = var
        for block in prog.blocks:
            for odesc in block.desc.ops:
                op = Operator._wrap(block, odesc, reg.find(odesc.type))
                block.ops.append(op)
                for name in op.output_arg_names:
                    var = block._find_var_recursive(name)
                    if var is not None:
                        var.op = op
        return prog

    # -- copies ----------------------------------------------------------------------------
    def clone(self, for_test=False):
        """A deep copy. ``for_test``: an inference program: backward, optimizer and
        learning-rate-schedule ops are dropped and every op that has an ``is_test`` attribute
        gets it set."""
        prog = Program.from_desc(self.desc, self._registry)
        prog._random_seed = self._random_seed   # the ops' seeds came along in the desc
        for block, twin in zip(self.blocks, prog.blocks):
            for op, copy in zip(block.ops, twin.ops):
                if getattr(op, "_seed_from_program", False):
                    copy._seed_from_program = True
        prog.current_block_idx = self.current_block_idx
        for p in self.all_parameters():
            q = prog.global_block().vars[p.name]
            for k, v in p.python_state().items():
                setattr(q, k, v)
        if for_test:
            for block in prog.blocks:
                for i in reversed(range(len(block.ops))):
                    op = block.ops[i]
                    role = op.attr("op_role") if op.has_attr("op_role") else 0
                    if role & (OP_ROLE_BACKWARD | OP_ROLE_OPTIMIZE | OP_ROLE_LRSCHED):
                        block.remove_op(i)
                    elif op.opdef is not None and "is_test" in op.opdef.attrs:
                        op.set_attr("is_test", True)
        return prog

    # -- text ------------------------------------------------------------------------------
    def to_string(self, show_bookkeeping=False):
        """A readable listing of every block, variable and op."""
        head = f"program (format version {self.desc.version.version}), " \
               f"{len(self.blocks)} block(s)"
        return "\n".join([head] + [b.to_string(show_bookkeeping) for b in self.blocks])

    __str__ = to_string

    def __repr__(self):
        return f"<Program blocks={len(self.blocks)} " \
               f"ops={sum(len(b.ops) for b in self.blocks)}>"


# -- the default programs -----------------------------------------------------------------

defaults.main = Program()
defaults.startup = Program()


def default_main_program():
    """The program layers append to outside any ``program_guard``."""
    return defaults.main


def default_startup_program():
    """The program parameter initializers go to outside any ``program_guard``."""
    return defaults.startup


def switch_main_program(program):
    """Make ``program`` the default main program; return the previous one."""
    old, defaults.main = defaults.main, program
    return old


def switch_startup_program(program):
    """Make ``program`` the default startup program; return the previous one."""
    old, defaults.startup = defaults.startup, program
    return old


@contextlib.contextmanager
def program_guard(main_program, startup_program=None):
    """Layers inside the block append to ``main_program`` (and ``startup_program``)."""
    # main_program is required (None would make default_main_program() return None).
    for p in (main_program,) + ((startup_program,) if startup_program is not None else ()):
        if not isinstance(p, Program):
            raise ProgramError(f"program_guard takes Program objects, got {type(p).__name__}")
    old_main = switch_main_program(main_program)
    old_startup = switch_startup_program(startup_program) if startup_program is not None else None
    try:
        yield
    finally:
        switch_main_program(old_main)
        if startup_program is not None:
            switch_startup_program(old_startup)
