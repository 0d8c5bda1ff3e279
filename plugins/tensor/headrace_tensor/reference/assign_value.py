"""References and samples: assign_value."""
import numpy as np

from headrace import dtypes as dt

from ._util import f32

_VALUE_ATTRS = {"float32": "fp32_values", "int32": "int32_values", "int64": "int64_values",
                "bool": "bool_values", "float64": "fp64_values"}


def assign_value(inputs, attrs):
    name = dt.from_proto(attrs.get("dtype", 5))
    values = attrs.get(_VALUE_ATTRS[name], [])
    if name == "float32":
        values = [f32(v) for v in values]
    return {"Out": np.array(values, dtype=name).reshape([int(d) for d in attrs.get("shape", [])])}


def sample_assign_value(rng, dtype):
    key = _VALUE_ATTRS[dtype]
    return {}, {"shape": [2, 3], "dtype": dt.to_proto(dtype),
                key: [float(v) for v in rng.standard_normal(6)]}


REFERENCES = {"assign_value": assign_value}
SAMPLES = {"assign_value": sample_assign_value}
