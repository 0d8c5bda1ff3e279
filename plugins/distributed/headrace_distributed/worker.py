"""``python -m headrace_distributed.worker``: a rank that runs what the driver sends, and no
user code at all (``mpiexec -n 1 python driver.py : -n 3 python -m
headrace_distributed.worker``); it exits when the driver calls ``stop_workers()``."""
from .program_mode import serve_forever
from .runtime import init

if __name__ == "__main__":
    init()
    serve_forever()
