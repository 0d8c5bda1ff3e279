"""uniform_random and gaussian_random: no elementwise reference (the outputs are random);
their tests check statistics and seed reproducibility instead."""
from headrace import dtypes as dt


def uniform_random(inputs, attrs):
    return {"Out": None}


def gaussian_random(inputs, attrs):
    return {"Out": None}


def sample_uniform_random(rng, dtype):
    return {}, {"shape": [64, 32], "min": -2.0, "max": 3.0, "seed": int(rng.integers(1, 1000)),
                "dtype": dt.to_proto(dtype)}


def sample_gaussian_random(rng, dtype):
    return {}, {"shape": [64, 32], "mean": 1.0, "std": 2.0, "seed": int(rng.integers(1, 1000)),
                "dtype": dt.to_proto(dtype)}


REFERENCES = {"uniform_random": uniform_random, "gaussian_random": gaussian_random}
SAMPLES = {"uniform_random": sample_uniform_random, "gaussian_random": sample_gaussian_random}
