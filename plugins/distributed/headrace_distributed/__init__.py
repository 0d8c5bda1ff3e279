"""headrace-distributed: data-parallel training on MPI.

    import headrace_distributed as dist
    env = dist.init()                                   # rank, world_size from MPI
    opt = dist.DistributedOptimizer(hr.optimizer.SGD(0.1), bucket_size_mb=25)
    opt.minimize(loss)                                  # the data-parallel rewrite
    # or: dist.transpile(main, startup) after an ordinary minimize

Run with ``headrace launch -n 2 train.py``. The collective ops (c_allreduce_sum, c_broadcast,
...) are ordinary headrace ops of this plugin.
"""
from .comm import CollectiveTimeoutError, DistributedError, new_ring
from .data import load_checkpoint, save_checkpoint, shard_indices, shard_reader
from .failure import ProgramMismatchError, check_programs, program_fingerprint
from .optimizer import DistributedOptimizer
from .program_mode import launch_program, serve_forever, serve_program, stop_workers
from .runtime import Env, init, rank, world_size
from .transpiler import gradient_buckets, transpile, use_sync_batch_norm

__all__ = ["init", "rank", "world_size", "Env", "DistributedOptimizer", "transpile",
           "use_sync_batch_norm", "gradient_buckets", "shard_indices", "shard_reader",
           "save_checkpoint", "load_checkpoint", "launch_program", "serve_program",
           "serve_forever", "stop_workers", "new_ring",
           "check_programs", "program_fingerprint", "DistributedError",
           "CollectiveTimeoutError", "ProgramMismatchError"]
