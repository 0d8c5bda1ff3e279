"""Small helpers for tests that build programs with layers."""
from ..runtime import CPUPlace, Executor, Scope

__all__ = ["op_types", "run_programs"]


def op_types(program, block=0):
    """The op types of one block of ``program``, in order."""
    return [op.type for op in program.block(block).ops]


def run_programs(main, startup, feed=None, fetch=(), place=None):
    """Run ``startup`` then ``main`` once in a fresh scope; return ``main``'s fetches."""
    scope = Scope()
    exe = Executor(place or CPUPlace())
    exe.run(startup, scope=scope)
    return exe.run(main, feed=feed or {}, fetch_list=list(fetch), scope=scope)
