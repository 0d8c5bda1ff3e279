"""The standing crash fuzzer (issue 10): mutated program files, model files, attributes and
feeds, run in worker processes, so that an interpreter crash or a hang is a failing case with
its input rather than a dead test run. Every case must run or raise a HeadraceError. A few
thousand cases here; ``pytest -m fuzz`` (``tox -e fuzz``) runs the 20,000 programs and 5,000
model files of the acceptance."""
import pytest

from headrace.testing.crashfuzz import run_cases


def _check(kind, seed, n, min_ran):
    stats = {}
    failures = run_cases(kind, seed, n, stats=stats)
    assert not failures, "\n".join(
        f"{f.kind} case {f.case}: {f.what}\n  input (base64): {f.data[:400]}"
        for f in failures[:5])
    # The mutations must reach execution, not only the parser's refusals.
    assert stats.get("ran", 0) >= min_ran * n, stats
    assert stats.get("refused", 0) >= 0.2 * n, stats


@pytest.mark.parametrize("kind, n", [("program", 1500), ("model", 600)])
def test_mutated_files_never_crash_hang_or_raise_a_foreign_error(kind, n):
    _check(kind, 0, n, min_ran=0.1)


@pytest.mark.fuzz
@pytest.mark.parametrize("kind, n", [("program", 20000), ("model", 5000)])
def test_mutated_files_long_run(kind, n):
    _check(kind, 1, n, min_ran=0.1)
