"""The user's source line (op_callstack) of the ops that headrace's own loops append: the
backward pass and an optimizer read it once for all their ops (callsite.pinned), which must
give what walking each op's frames gives."""
import inspect

import headrace as hr
from headrace.callsite import pinned, user_callsite
from headrace.framework.program import OP_ROLE_BACKWARD, OP_ROLE_OPTIMIZE

L = hr.layers
HERE = __file__


def _site(line):
    return f'File "{HERE}", line {line}'


def _net():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup), hr.unique_name.guard():
        x = L.data("x", shape=[-1, 4], dtype="float32")
        loss = L.mean(L.fc(L.fc(x, size=3, act="relu"), size=2))
    return main, startup, loss


def _sources(main, role):
    return {op.source for op in main.global_block().ops if op.attr("op_role") & role}


def test_grad_and_update_ops_name_the_minimize_line():
    main, startup, loss = _net()
    with hr.program_guard(main, startup):
        hr.optimizer.Adam(learning_rate=0.1).minimize(loss)
        line = inspect.currentframe().f_lineno - 1
    assert _sources(main, OP_ROLE_BACKWARD) == {_site(line) + ", in "
                                                "test_grad_and_update_ops_name_the_minimize_line"
                                                "\n    hr.optimizer.Adam(learning_rate=0.1)"
                                                ".minimize(loss)"}
    assert _sources(main, OP_ROLE_OPTIMIZE) == _sources(main, OP_ROLE_BACKWARD)
    # The accumulators' initializers in the startup program too.
    assert {op.source for op in startup.global_block().ops if "Adam" in (op.source or "")} \
        == _sources(main, OP_ROLE_OPTIMIZE)


class _MySGD(hr.optimizer.SGD):
    def _append_optimize_op(self, block, param_and_grad):
        self.line = inspect.currentframe().f_lineno + 1
        return super()._append_optimize_op(block, param_and_grad)


def test_an_optimizer_subclass_method_is_the_users_line():
    main, startup, loss = _net()
    opt = _MySGD(learning_rate=0.1)
    with hr.program_guard(main, startup):
        opt.minimize(loss)
    (source,) = {op.source for op in main.global_block().ops if op.type == "sgd"}
    assert source.startswith(_site(opt.line) + ", in _append_optimize_op")


def test_pinned_gives_the_callers_site_and_can_be_lifted():
    side = inspect.currentframe().f_lineno + 3

    def user_side():   # this module is not headrace's: its frames are the user's
        return user_callsite()

    line = inspect.currentframe().f_lineno + 1
    with pinned():
        assert user_callsite().startswith(_site(line))
        assert user_side().startswith(_site(line))
        with pinned(False):   # user code may run inside: walked again
            assert user_side().startswith(_site(side))
        assert user_side().startswith(_site(line))
    assert user_side().startswith(_site(side))
