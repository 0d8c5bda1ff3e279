"""momentum's attributes, shared by the CPU and CUDA kernels (read once, when the kernel is
made)."""


def momentum_attrs(attrs):
    """(mu, use_nesterov, the L2 decay coefficient (0 without 'l2_decay'), rescale_grad)."""
    method = attrs.get("regularization_method", "")
    if method not in ("", "l2_decay"):
        raise ValueError(f"momentum: regularization_method {method!r} is not '' or "
                         f"'l2_decay'")
    return (attrs["mu"], bool(attrs.get("use_nesterov", False)),
            attrs.get("regularization_coeff", 0.0) if method == "l2_decay" else 0.0,
            attrs.get("rescale_grad", 1.0))


def refuse_master_param(master_param):
    """MasterParam (multi_precision training of a float16 Param) is not supported."""
    if master_param is not None:
        raise ValueError("momentum: MasterParam (multi_precision training of a float16 "
                         "Param) is not supported here")
