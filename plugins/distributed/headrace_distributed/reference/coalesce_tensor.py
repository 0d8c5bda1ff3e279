"""Reference of coalesce_tensor: the inputs flattened one after another, each padded."""
import numpy as np

from headrace.dtypes import from_proto, to_proto

ALIGN_BYTES = 256


def coalesce_tensor(inputs, attrs):
    xs = inputs["Input"]
    dtype = np.dtype(from_proto(attrs.get("dtype", to_proto("float32"))))
    use_align = attrs.get("use_align", True)
    align = attrs.get("align_size", -1)
    step = max(1, (align if align > 0 else ALIGN_BYTES) // dtype.itemsize) if use_align else 1
    pieces = []
    for x in xs:
        flat = np.asarray(x, dtype).reshape(-1)
        pad = (-flat.size) % step
        pieces.append(np.concatenate([flat, np.zeros(pad, dtype)]))
    fused = np.concatenate(pieces) if pieces else np.zeros(0, dtype)
    if attrs.get("set_constant", False):
        c = attrs.get("constant", 0.0)
        return {"Output": [np.full(x.shape, c, dtype) for x in xs],
                "FusedOutput": np.full(fused.shape, c, dtype)}
    if not attrs.get("copy_data", False):
        fused = np.zeros_like(fused)
    return {"Output": [np.array(x) for x in xs], "FusedOutput": fused}


def sample_coalesce_tensor(rng, dtype):
    xs = [rng.standard_normal(s).astype(dtype) for s in ((3, 2), (5,), (2, 2, 2))]
    return {"Input": xs}, {"copy_data": True, "dtype": to_proto(dtype), "align_size": 16}


REFERENCES = {"coalesce_tensor": coalesce_tensor}
SAMPLES = {"coalesce_tensor": sample_coalesce_tensor}
