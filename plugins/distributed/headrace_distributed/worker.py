"""``python -m headrace_distributed.worker``: a rank that runs what the driver sends
(``mpiexec -n 1 python driver.py : -n 3 python -m headrace_distributed.worker``)."""
from .program_mode import serve_program
from .runtime import init

if __name__ == "__main__":
    init()
    serve_program()
