"""shape: Input's run-time dims as int32 (the program's -1 dims filled in); no gradient."""
import numpy as np
import pytest

import headrace as hr
from headrace import layers
from headrace.ops import default_registry
from headrace.testing import run_op


@pytest.mark.parametrize("dims", [[], [0], [3], [2, 0, 5], [1, 2, 3, 4]])
def test_shape_of_any_rank(dims):
    (out,) = run_op("shape", {"Input": np.zeros(dims, np.float32)})["Out"]
    assert out.numpy().dtype == np.int32
    np.testing.assert_array_equal(out.numpy(), np.array(dims, np.int32).reshape(-1))


def test_layer_fills_in_unknown_dims_and_has_no_gradient():
    main = hr.Program()
    with hr.program_guard(main, hr.Program()):
        x = layers.data("x", shape=[3, 4], dtype="float64")
        s = layers.shape(x)
        ints = layers.shape(layers.cast(x, "int64"))
    assert list(s.shape) == [3] and s.dtype == "int32" and s.stop_gradient
    (got, got_int) = hr.Executor().run(main, feed={"x": np.zeros((7, 3, 4))},
                                       fetch_list=[s, ints], scope=hr.Scope())
    np.testing.assert_array_equal(got, [7, 3, 4])
    np.testing.assert_array_equal(got_int, [7, 3, 4])
    assert not default_registry().get("shape").differentiable


def test_errors_name_the_op():
    with pytest.raises(hr.HeadraceError, match="shape: argument 'input' must be a Variable"):
        layers.shape(np.zeros(3))
