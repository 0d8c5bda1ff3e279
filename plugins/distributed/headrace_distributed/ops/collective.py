"""Collective ops under Paddle's names and attributes (paddle/fluid/operators/collective).

``ring_id`` picks the communicator (0: every rank). ``use_calc_stream`` and
``use_model_parallel`` are Paddle's; the first is a CUDA stream hint with nothing to say on
MPI, the second picks the gradient of ``c_allreduce_sum`` (``c_identity`` in model
parallelism, ``c_allreduce_sum`` otherwise, as Paddle's CAllReduceSumOpGradMaker).
When X and Out are one variable the reduction is in place, as in Paddle.
"""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import GradOp
from headrace.ops.shape import same_as

DTYPES = ("float32", "float64", "int32", "int64")


def _non_negative(v):
    return None if v >= 0 else "must be >= 0"


def _positive(v):
    return None if v > 0 else "must be > 0"


def _ring():
    return Attr("ring_id", "int", 0, "communication ring (0: every rank)", check=_non_negative)


def _stream():
    return Attr("use_calc_stream", "bool", False, "Paddle's CUDA stream hint (no effect on MPI)")


def _allreduce(kind, extra_attrs=(), extra_inputs=()):
    return OpDef(
        f"c_allreduce_{kind}",
        inputs=[In("X", "the local tensor", dtypes=DTYPES), *extra_inputs],
        outputs=[Out("Out", f"the elementwise {kind} over the ring's ranks, shape of X")],
        attrs=[_ring(), _stream(), *extra_attrs],
        infer=same_as("X"),
        differentiable=kind == "sum",
        doc=f"Out = the elementwise {kind} of X over every rank of ring_id (MPI Allreduce); "
            f"in place when X and Out are one variable.",
    )


c_allreduce_sum = _allreduce(
    "sum",
    extra_attrs=[Attr("use_model_parallel", "bool", False,
                      "model parallelism: the gradient is c_identity, not c_allreduce_sum")],
    extra_inputs=[In("Cond", "Paddle's optional bool switch (headrace always reduces)",
                     optional=True, dtypes=("bool",))])
c_allreduce_max = _allreduce("max")
c_allreduce_min = _allreduce("min")
c_allreduce_prod = _allreduce("prod")


def _allreduce_sum_grad(ctx):
    # Paddle's CAllReduceSumOpGradMaker: every rank's Out depends on every rank's X, so
    # X@GRAD on one rank is the sum of Out@GRAD over the ranks (identity in model parallelism).
    if not ctx.wants("X"):
        return []
    kind = "c_identity" if ctx.attrs.get("use_model_parallel") else "c_allreduce_sum"
    attrs = dict(ctx.attrs)
    if kind == "c_identity":
        attrs.pop("use_model_parallel", None)
    return [GradOp(kind, {"X": ctx.output_grad("Out")}, {"Out": ctx.input_grad("X")}, attrs)]


c_allreduce_sum.grad = _allreduce_sum_grad

c_identity = OpDef(
    "c_identity",
    inputs=[In("X", "the tensor", dtypes=DTYPES)],
    outputs=[Out("Out", "X unchanged")],
    attrs=[_ring(), _stream(), Attr("use_model_parallel", "bool", True,
                                    "Paddle's flag: the op belongs to a model-parallel layer")],
    infer=same_as("X"),
    doc="Out = X; its gradient is c_allreduce_sum over ring_id (model parallelism).",
)


def _identity_grad(ctx):
    if not ctx.wants("X"):
        return []
    attrs = {k: v for k, v in ctx.attrs.items() if k != "use_model_parallel"}
    return [GradOp("c_allreduce_sum", {"X": ctx.output_grad("Out")},
                   {"Out": ctx.input_grad("X")}, attrs)]


c_identity.grad = _identity_grad

c_broadcast = OpDef(
    "c_broadcast",
    inputs=[In("X", "the tensor (its value matters on the root only)", dtypes=DTYPES)],
    outputs=[Out("Out", "the root's X on every rank, shape of X")],
    attrs=[_ring(), Attr("root", "int", 0, "the rank (in the ring) whose X is sent",
                         check=_non_negative), _stream()],
    infer=same_as("X"),
    differentiable=False,
    doc="Out = X of rank `root` of ring_id on every rank (MPI Bcast); the data-parallel "
        "rewrite broadcasts each parameter from rank 0 in the startup program.",
)


def _infer_gather(ctx, grow):
    x = ctx.input("X")
    nranks = ctx.attr("nranks")
    ctx.expect(x.rank >= 1, f"X '{x.name}' must have a first axis to "
               f"{'gather along' if grow else 'scatter'}", expected="rank >= 1",
               found=f"rank 0, shape {list(x.shape)}")
    first = x.shape[0]
    if grow:
        first = -1 if first < 0 else first * nranks
    else:
        ctx.expect(first < 0 or first % nranks == 0,
                   f"X '{x.name}''s first axis must split evenly over nranks={nranks}",
                   expected=f"a multiple of {nranks}", found=f"shape {list(x.shape)}")
        first = -1 if first < 0 else first // nranks
    ctx.set_output("Out", [first, *x.shape[1:]], x.dtype)


def _nranks():
    return Attr("nranks", "int", 1, "number of ranks in the ring (checked when it runs)",
                check=_positive)


c_allgather = OpDef(
    "c_allgather",
    inputs=[In("X", "the local tensor", dtypes=DTYPES)],
    outputs=[Out("Out", "every rank's X stacked along axis 0 in rank order")],
    attrs=[_ring(), _nranks(), _stream()],
    infer=lambda ctx: _infer_gather(ctx, True),
    doc="Out = concat of every rank's X along axis 0, rank order (MPI Allgather).",
)

c_reducescatter = OpDef(
    "c_reducescatter",
    inputs=[In("X", "the local tensor, first axis a multiple of nranks", dtypes=DTYPES)],
    outputs=[Out("Out", "this rank's 1/nranks slice of the sum over ranks")],
    attrs=[_ring(), _nranks(), _stream()],
    infer=lambda ctx: _infer_gather(ctx, False),
    doc="The sum of X over the ranks, cut along axis 0 into nranks slices; rank r keeps slice "
        "r (MPI Reduce_scatter_block).",
)


def _gather_grad(kind):
    def maker(ctx):
        # Paddle: allgather's gradient is a reducescatter of Out@GRAD, and the reverse.
        if not ctx.wants("X"):
            return []
        return [GradOp(kind, {"X": ctx.output_grad("Out")}, {"Out": ctx.input_grad("X")},
                       dict(ctx.attrs))]
    return maker


c_allgather.grad = _gather_grad("c_reducescatter")
c_reducescatter.grad = _gather_grad("c_allgather")

barrier = OpDef(
    "barrier",
    inputs=[In("X", "any tensor (orders the barrier after its writer)", dtypes=DTYPES)],
    outputs=[Out("Out", "X unchanged (orders later readers after the barrier)")],
    attrs=[_ring()],
    infer=same_as("X"),
    differentiable=False,
    doc="Waits until every rank of ring_id reaches it (MPI Barrier); Out = X.",
)

OPS = [c_allreduce_sum, c_allreduce_max, c_allreduce_min, c_allreduce_prod, c_identity,
       c_broadcast, c_allgather, c_reducescatter, barrier]
