"""rmsprop's attributes and output plan, shared by the CPU and CUDA kernels (read once, when
the kernel is made)."""


def rmsprop_attrs(attrs, info):
    """(epsilon, decay, momentum, centered, whether MeanGradOut is wanted, and whether Param,
    MeanSquare, MeanGrad and Moment are updated in place)."""
    return (attrs.get("epsilon", 1e-10), attrs.get("decay", 0.9), attrs.get("momentum", 0.0),
            bool(attrs.get("centered", False)), info is None or info.wants("MeanGradOut"),
            info is not None and info.in_place("Param", "ParamOut"),
            info is not None and info.in_place("MeanSquare", "MeanSquareOut"),
            info is not None and info.in_place("MeanGrad", "MeanGradOut"),
            info is not None and info.in_place("Moment", "MomentOut"))
