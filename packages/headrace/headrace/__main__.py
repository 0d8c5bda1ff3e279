"""``python -m headrace``: the ``headrace`` command, for where its script is not on PATH."""
import sys

from .cli import main

sys.exit(main())
