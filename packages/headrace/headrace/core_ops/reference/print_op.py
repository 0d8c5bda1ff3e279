"""References and samples: print (Out is In; the printed text is checked in tests/test_print_op.py
against tensor_format's own rules written out there)."""
import numpy as np

from ._util import data


def print_ref(inputs, attrs):
    return {"Out": np.array(data(inputs["In"]), copy=True)}


def sample_print(rng, dtype):
    # summarize 3 and first_n 1: the hygiene and fuzz tests that run every op print one line.
    return {"In": rng.standard_normal((2, 3)).astype(dtype)}, {"summarize": 3, "first_n": 1}


REFERENCES = {"print": print_ref}
SAMPLES = {"print": sample_print}
