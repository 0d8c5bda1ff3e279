"""References and samples: concat, split, concat_grad."""
import numpy as np

from ._util import data, int_tensor


def concat(inputs, attrs):
    xs = [data(x) for x in inputs["X"]]
    axis = attrs.get("axis", 0)
    if inputs.get("AxisTensor") is not None:
        axis = int(data(inputs["AxisTensor"]).reshape(-1)[0])
    return {"Out": np.concatenate(xs, axis=axis)}


def split(inputs, attrs):
    x = data(inputs["X"])
    axis = attrs.get("axis", 0)
    if inputs.get("AxisTensor") is not None:
        axis = int(data(inputs["AxisTensor"]).reshape(-1)[0])
    num, sections = attrs.get("num", 0), list(attrs.get("sections", []))
    if inputs.get("SectionsTensorList"):
        sections = [int(data(t).reshape(-1)[0]) for t in inputs["SectionsTensorList"]]
    if num > 0:
        return {"Out": np.split(x, num, axis=axis)}
    dim = x.shape[axis]
    if -1 in sections:
        sections[sections.index(-1)] = dim - sum(s for s in sections if s != -1)
    assert sum(sections) == dim and min(sections) >= 0, (sections, dim)
    return {"Out": np.split(x, np.cumsum(sections)[:-1], axis=axis)}


def sample_concat(rng, dtype):
    rank = int(rng.integers(1, 4))
    axis = int(rng.integers(-rank, rank))
    base = [int(d) for d in rng.integers(1, 4, rank)]
    xs = []
    for _ in range(int(rng.integers(1, 4))):
        shape = list(base)
        shape[axis] = int(rng.integers(0, 4))
        xs.append(rng.standard_normal(shape).astype(dtype))
    if rng.random() < 0.3:
        return {"X": xs, "AxisTensor": int_tensor(rng, [axis])}, {"axis": 0}
    return {"X": xs}, {"axis": axis}


def sample_split(rng, dtype):
    x = rng.standard_normal((4, 6, 3)).astype(dtype)
    axis = int(rng.choice([0, 1, -2, -1]))
    dim = x.shape[axis]
    if rng.random() < 0.4:
        return {"X": x}, {"axis": axis, "num": int(rng.choice([d for d in (1, 2, 3) if
                                                                 dim % d == 0]))}
    sections = [1, dim - 1] if rng.random() < 0.5 else [1, -1]
    if rng.random() < 0.3:
        return ({"X": x, "SectionsTensorList": [int_tensor(rng, [s]) for s in sections]},
                {"axis": axis, "sections": sections})
    return {"X": x}, {"axis": axis, "sections": sections}


def concat_grad(inputs, attrs):
    """Out@GRAD cut along axis into the sizes of the inputs X."""
    xs = [data(x) for x in inputs["X"]]
    g = data(inputs["Out@GRAD"])
    axis = attrs.get("axis", 0)
    if inputs.get("AxisTensor") is not None:
        axis = int(data(inputs["AxisTensor"]).reshape(-1)[0])
    axis = axis + g.ndim if axis < 0 else axis
    assert 0 <= axis < g.ndim
    for x in xs:
        assert x.ndim == g.ndim and x.dtype == g.dtype, (x.shape, x.dtype, g.shape, g.dtype)
        assert x.shape[:axis] + x.shape[axis + 1:] == g.shape[:axis] + g.shape[axis + 1:]
    sizes = [x.shape[axis] for x in xs]
    assert sum(sizes) == g.shape[axis], (sizes, g.shape)
    return {"X@GRAD": np.split(g, np.cumsum(sizes)[:-1], axis=axis)}


def sample_concat_grad(rng, dtype):
    inputs, attrs = sample_concat(rng, dtype)
    out = concat(inputs, attrs)["Out"]
    inputs["Out@GRAD"] = rng.standard_normal(out.shape).astype(dtype)
    return inputs, attrs


REFERENCES = {"concat": concat, "split": split, "concat_grad": concat_grad}
SAMPLES = {"concat": sample_concat, "split": sample_split, "concat_grad": sample_concat_grad}
