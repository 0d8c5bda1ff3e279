"""Program seeds written into random ops: the reproducibility that crosses the wire.

A ProgramDesc has no field for the program's ``random_seed``, so a seed the executor derived
at run time would stay behind in the process that built the program. Fluid's layers and
initializers therefore write ``program.random_seed`` into the ``seed`` attribute of each random
op they build, and the serialized program carries it. headrace does the same for every op whose
definition names a ``seed_attr`` (uniform_random, gaussian_random, dropout, ...), when the op is
committed to a block, whichever API appends it; a startup program parsed in another process
then initializes exactly as in the driver.

The rules:

- An op given its own nonzero seed keeps it.
- ``random_seed`` 0 (the default) writes nothing: the attribute stays 0 and the kernel draws
  from fresh entropy (Fluid's "0 means random").
- Otherwise the op gets ``derive(random_seed, block index, op type, rank)``, its rank being
  the order in which the block's seeded ops were built (their order in the block when the
  seed is set afterwards). Fluid writes the program's seed itself, so two
  parameters of one shape start equal; a derived seed gives each op its own stream, and two
  builds with one ``random_seed`` still get the same seeds.
- dropout keeps ``fix_seed`` false (Fluid sets it): with a seed of its own headrace's kernel
  draws a reproducible sequence of different masks, one per run, where a fixed seed would drop
  the same elements at every step of training. Paddle ignores ``seed`` without ``fix_seed``, so
  such a program is valid there and draws unseeded masks.
- Setting ``program.random_seed`` after ops were built re-derives the seeds the program wrote
  (and writes those of unseeded ops built earlier), so the desc always holds what the executor
  uses; setting it to 0 clears them. Which seeds the program wrote is known in the building
  process only (``Operator._seed_from_program``); in a parsed program every seed is the op's own.
"""
import zlib

import numpy as np

from ..errors import ProgramError

__all__ = ["derive", "check_random_seed", "stamp_attrs", "reseed"]

# A seed attribute is an int32 on the wire and the random ops refuse negative seeds; 0 means
# "none": derived seeds lie in [1, 2**31 - 1].
_SEED_RANGE = 2**31 - 1


def derive(random_seed, block_idx, op_type, rank):
    """The seed the program writes into its ``rank``-th seeded op of block ``block_idx``."""
    words = [int(random_seed), int(block_idx), zlib.crc32(op_type.encode()), int(rank)]
    return int(np.random.SeedSequence(words).generate_state(1)[0]) % _SEED_RANGE + 1


def check_random_seed(seed):
    """``seed`` as an int, or a ProgramError saying what a program seed must be."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or int(seed) < 0:
        raise ProgramError(f"Program.random_seed must be an int >= 0 (0: unseeded), got "
                           f"{type(seed).__name__} {seed!r}")
    return int(seed)


def _next_rank(block):
    """The rank of the next seeded op of ``block``: a per-block counter (Python-side), started
    from the seeded ops a parsed or cloned block already holds."""
    rank = getattr(block, "_seed_rank", None)
    if rank is None:
        rank = sum(1 for op in block.ops if op.opdef is not None and op.opdef.seed_attr)
    block._seed_rank = rank + 1
    return rank


def stamp_attrs(block, opdef, attrs):
    """At an op's commit: write the program's derived seed into ``attrs`` (the op's checked
    attribute values, changed in place) when the op takes one and has none of its own.
    Returns True when the seed was the program's."""
    name = opdef.seed_attr
    if not name:
        return False
    rank = _next_rank(block)
    base = block.program.random_seed
    if attrs.get(name) or not base:
        return False
    attrs[name] = derive(base, block.idx, opdef.type, rank)
    return True


def reseed(program):
    """After ``program.random_seed`` changed: re-derive the seeds the program wrote and write
    those of seeded ops still at 0 (or clear them all when the new seed is 0)."""
    base = program.random_seed
    for block in program.blocks:
        rank = 0
        for op in block.ops:
            name = op.opdef.seed_attr if op.opdef is not None else None
            if not name:
                continue
            if getattr(op, "_seed_from_program", False) or not op.attr(name):
                op.set_attr(name, derive(base, block.idx, op.type, rank) if base else 0)
                op._seed_from_program = bool(base)
            rank += 1
        block._seed_rank = rank
