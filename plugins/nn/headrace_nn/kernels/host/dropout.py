"""dropout's host logic, one copy for kernels/cpu/dropout.pyx and kernels/cuda/dropout.py: the
attributes checked, the kept elements' scale, and which seed a forward kernel draws from."""

__all__ = ["DropoutAttrs", "stream_seed", "SEED_MASK"]

# A seed as the generators take it: a negative seed is its 64-bit pattern.
SEED_MASK = 0xFFFFFFFFFFFFFFFF


class DropoutAttrs:
    """dropout_prob (checked, errors naming ``op``), is_test, upscale_in_train, and ``scale``:
    a kept element's factor in training (1 / (1 - p) for upscale_in_train; with p = 1 nothing
    is kept and the scale is moot)."""

    def __init__(self, attrs, op):
        self.p = attrs.get("dropout_prob", 0.5)
        if not 0.0 <= self.p <= 1.0:
            raise ValueError(f"{op}: dropout_prob must be in [0, 1], got {self.p}")
        self.is_test = attrs.get("is_test", False)
        self.upscale = attrs.get("dropout_implementation",
                                 "downgrade_in_infer") == "upscale_in_train"
        self.scale = 1.0 / (1.0 - self.p) if self.upscale and self.p < 1.0 else 1.0


def stream_seed(attrs, info):
    """(fixed, seed): whether every run draws the same mask (fix_seed), and the seed of the
    kernel's stream: info.seed (the op's seed, or one derived from the program's), else for
    fix_seed the attribute (seed 0 still fixes the stream), else None (nondeterministic)."""
    info_seed = getattr(info, "seed", None) if info is not None else None
    fixed = attrs.get("fix_seed", False)
    seed = (info_seed if info_seed is not None else attrs.get("seed", 0)) if fixed \
        else info_seed
    return fixed, (int(seed) & SEED_MASK if seed is not None else None)
