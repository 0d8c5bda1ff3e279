"""References and samples: arg_max, arg_min."""
import numpy as np

from ._util import data


def _arg(find):
    def reference(inputs, attrs):
        x = data(inputs["X"])
        dtype = np.int32 if attrs["dtype"] == 2 else np.int64
        if attrs["flatten"]:
            shape = (1,) * x.ndim if attrs["keepdims"] else ()
            return {"Out": np.full(shape, find(x.reshape(-1)), dtype)}
        out = find(x, axis=attrs["axis"], keepdims=attrs["keepdims"]).astype(dtype)
        return {"Out": np.asarray(out)}
    return reference


def sample(rng, dtype):
    shape = [int(d) for d in rng.integers(1, 5, size=int(rng.integers(1, 4)))]
    # Few distinct values, so that ties (the first index wins) occur.
    x = rng.integers(-3, 3, size=shape).astype(dtype)
    return {"X": x}, {"axis": int(rng.integers(-len(shape), len(shape))),
                      "keepdims": bool(rng.random() < 0.5), "flatten": bool(rng.random() < 0.2),
                      "dtype": int(rng.choice([2, 3]))}


REFERENCES = {"arg_max": _arg(np.argmax), "arg_min": _arg(np.argmin)}
SAMPLES = {"arg_max": sample, "arg_min": sample}
