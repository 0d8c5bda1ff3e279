"""The optim plugin as a whole: which ops it registers, and that each is documented."""
import pytest

from headrace.testing import definition_problems, op_definitions
from headrace.testing.plugin_dists import first_party_plugin

PACKAGE = "headrace_optim.ops"
PLUGIN = first_party_plugin("optim")  # "headrace:optim" where installed whole
EXPECTED = [
    "adagrad", "adam", "adamw", "momentum", "rmsprop", "sgd",
]
OPDEFS = op_definitions(PACKAGE)


def test_the_ops_of_the_family():
    assert sorted(d.type for d in OPDEFS) == sorted(EXPECTED)


@pytest.mark.parametrize("opdef", OPDEFS, ids=lambda d: d.type)
def test_registered_and_documented(opdef):
    assert not definition_problems(opdef, PLUGIN, PACKAGE)
