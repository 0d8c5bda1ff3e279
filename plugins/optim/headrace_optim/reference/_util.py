"""Helpers the reference modules share (a private module: reference discovery skips it)."""
import numpy as np


def f32(v):
    """A 'float' attribute as the op sees it: attributes of type float are float32."""
    return float(np.float32(v))


def scalar(a):
    """A one-element input as a Python float (so NumPy keeps the arrays' dtype)."""
    return float(np.asarray(a).reshape(-1)[0])


def arrays(inputs, *slots):
    return [np.asarray(inputs[s]) for s in slots]


def base_sample(rng, dtype, shape=(4, 5)):
    """Param, Grad and a LearningRate of 0.01 .. 0.1."""
    return {"Param": rng.standard_normal(shape).astype(dtype),
            "Grad": rng.standard_normal(shape).astype(dtype),
            "LearningRate": np.array([rng.uniform(0.01, 0.1)], dtype=dtype)}
