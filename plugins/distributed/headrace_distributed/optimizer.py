"""DistributedOptimizer: an optimizer whose minimize applies the data-parallel rewrite."""
from headrace.framework.program import default_startup_program

from .transpiler import DEFAULT_BUCKET_MB, transpile, use_sync_batch_norm

__all__ = ["DistributedOptimizer"]


class DistributedOptimizer:
    """Wraps any headrace optimizer (Fluid's fleet.distributed_optimizer).

    ``minimize`` turns batch_norm into sync_batch_norm first when ``sync_batch_norm`` (so the
    backward pass differentiates the synchronized op), runs the wrapped optimizer's minimize,
    then :func:`headrace_distributed.transpile` (parameters broadcast from rank 0 in the
    startup program; gradients reduced in buckets of ``bucket_size_mb`` MB, 0: one call per
    gradient, and scaled by 1/nranks before the update ops). ``check_programs``: compare the
    programs across the ranks when minimize runs (a collective: every rank must minimize;
    ``False`` on the driver of ``launch_program``, whose workers build nothing)."""

    def __init__(self, optimizer, bucket_size_mb=DEFAULT_BUCKET_MB, sync_batch_norm=False,
                 nranks=None, ring_id=0, check_programs=True):
        self.inner = optimizer
        self.bucket_size_mb = bucket_size_mb
        self.sync_batch_norm = sync_batch_norm
        self.nranks = nranks
        self.ring_id = ring_id
        self.check_programs = check_programs

    def minimize(self, loss, startup_program=None, parameter_list=None, no_grad_set=None):
        main = loss.block.program
        startup = startup_program or default_startup_program()
        if self.sync_batch_norm:
            use_sync_batch_norm(main)
        result = self.inner.minimize(loss, startup, parameter_list, no_grad_set)
        transpile(main, startup, nranks=self.nranks, bucket_size_mb=self.bucket_size_mb,
                  ring_id=self.ring_id, check=self.check_programs)
        return result

    def __repr__(self):
        return (f"<DistributedOptimizer {self.inner!r} bucket_size_mb={self.bucket_size_mb} "
                f"sync_batch_norm={self.sync_batch_norm}>")
