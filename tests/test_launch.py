"""headrace launch: the mpiexec command line and the failed rank read from mpiexec's output
(the jobs themselves run in plugins/distributed/tests, where MPI is installed)."""
import sys

from headrace.cli import main
from headrace.launch import failed_rank, launch_command

OPEN_MPI_SIGNAL = """--------------------------------------------------------------------------
prterun noticed that process rank 1 with PID 25704 on node vm exited on
signal 9 (Killed).
--------------------------------------------------------------------------"""

OPEN_MPI_ABORT = """headrace.distributed: rank 3 of 4 failed:
Traceback (most recent call last):
RuntimeError: boom
headrace.distributed: rank 0 of 4 failed:
--------------------------------------------------------------------------
MPI_ABORT was invoked on rank 0 in communicator MPI_COMM_WORLD"""

OPEN_MPI_EXIT = """prterun detected that one or more processes exited with non-zero status,
thus causing the job to be terminated. The first process to do so was:

   Process name: [prterun-vm-3021@1,2]
   Exit code:    3"""

TIMED_OUT = """headrace.distributed: rank 0 of 3 failed:
headrace_distributed.comm.CollectiveTimeoutError: c_allreduce_sum (ring 0): rank 0 waited 5 s \
for the other 2 rank(s) of its communicator (world ranks [0, 1, 2]) in its collective #7; one \
of them died
headrace.distributed: rank 2 of 3 failed:
headrace_distributed.comm.CollectiveTimeoutError: c_allreduce_sum (ring 0): rank 2 waited 5 s \
for the other 2 rank(s) of its communicator (world ranks [0, 1, 2]) in its collective #7; one \
of them died"""

MPICH_SIGNAL = "=   RANK 1 PID 77 RUNNING AT vm\n=   KILLED BY SIGNAL: 9 (Killed)"


def test_the_failed_rank_and_how():
    assert failed_rank(OPEN_MPI_SIGNAL) == (1, "exited on signal 9 Killed")
    # The first rank whose exception escaped, not the one MPI_Abort was called on last.
    assert failed_rank(OPEN_MPI_ABORT) == (3, "raised an exception")
    assert failed_rank(OPEN_MPI_EXIT) == (2, "exited with code 3")
    assert failed_rank(MPICH_SIGNAL) == (1, "exited on signal 9")
    # Ranks 0 and 2 timed out waiting in the same collective: rank 1 never came.
    rank, how = failed_rank(TIMED_OUT)
    assert rank == 1 and how.startswith("never reached c_allreduce_sum (ring 0), the "
                                        "collective #7 of ranks [0, 2]")
    assert failed_rank("all fine\n") is None


def test_mpiexec_command_line(tmp_path):
    fake = tmp_path / "mpiexec"
    cmd = launch_command(64, ["train.py", "--lr", "0.1"], mpiexec=str(fake))
    assert cmd[:3] == [str(fake), "-n", "64"] and "--oversubscribe" in cmd
    assert cmd[-4:] == [sys.executable, "train.py", "--lr", "0.1"]
    cmd = launch_command(2, ["t.py"], hostfile="hosts", mpiexec=str(fake))
    assert cmd[3:5] == ["--hostfile", "hosts"] and "--oversubscribe" not in cmd


def test_a_missing_mpiexec_is_a_clear_error(tmp_path, capsys):
    rc = main(["launch", "-n", "2", "--mpiexec", str(tmp_path / "none"), "t.py"])
    assert rc == 1
    assert "headrace launch: error" in capsys.readouterr().err
