"""Op definitions of the distributed plugin; each module lists ``OPS``."""
