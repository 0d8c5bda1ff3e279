"""What the control op modules share. A private module: auto-registration skips it."""
from headrace.ops import Attr
from headrace.ops.shape import numel

__all__ = ["sub_block_attr", "skip_vars_attr", "expect_one_element", "expect_kind"]


def _sub_block_check(v):
    idx = getattr(v, "idx", v)
    return "must be a sub-block (index >= 1), not the global block" if idx == 0 else None


def sub_block_attr(doc):
    """The required BLOCK attribute of an op that owns a block."""
    return Attr("sub_block", "block", doc=doc, check=_sub_block_check)


def skip_vars_attr():
    # Paddle's garbage-collection bookkeeping; present in programs Paddle writes.
    return Attr("skip_eager_deletion_vars", "strings", [],
                "variables Paddle's eager deletion must keep (ignored)")


def expect_one_element(ctx, meta, slot):
    """Fail unless ``meta`` holds one element (unknown dims pass)."""
    if numel(meta.shape) not in (1, -1):
        ctx.fail(f"input '{slot}' ({meta.name}) must hold exactly one element",
                 expected="shape [1] (or [])", found=f"shape {list(meta.shape)}")


def expect_kind(ctx, meta, kind, slot):
    """Fail unless the variable is of ``kind``."""
    if meta.kind != kind:
        ctx.fail(f"input '{slot}' ({meta.name}) is a {meta.kind} variable",
                 expected=kind, found=meta.kind)
