"""sequence_mask: lengths to masks (maxlen given, from a tensor, or the largest length), the
output dtype, and errors."""
import numpy as np
import pytest

import headrace as hr
from headrace import dtypes as dt
from headrace import layers
from headrace.testing import run_op


@pytest.mark.parametrize("maxlen, width", [(None, 4), (6, 6)])
def test_mask_of_lengths(maxlen, width):
    main = hr.Program()
    with hr.program_guard(main, hr.Program()):
        x = layers.data("x", shape=[3], dtype="int64", append_batch_size=False)
        y = layers.sequence_mask(x, maxlen=maxlen, dtype="float32")
    (got,) = hr.Executor().run(main, feed={"x": np.array([2, 0, 4])}, fetch_list=[y],
                               scope=hr.Scope())
    want = (np.arange(width) < np.array([[2], [0], [4]])).astype(np.float32)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want)


def test_maxlen_tensor_and_bool_output():
    (y,) = run_op("sequence_mask", {"X": np.array([[1, 3]], np.int32),
                                    "MaxLenTensor": np.array([3], np.int64)},
                  attrs={"out_dtype": dt.to_proto("bool")})["Y"]
    np.testing.assert_array_equal(np.asarray(y.data), [[[True, False, False],
                                                        [True, True, True]]])


def test_errors():
    with pytest.raises(hr.HeadraceError, match="negative length"):
        run_op("sequence_mask", {"X": np.array([1, -2])})
    with pytest.raises(hr.HeadraceError, match="attribute 'maxlen' must be positive"):
        run_op("sequence_mask", {"X": np.array([1, 2])}, attrs={"maxlen": 0})
