"""Op definitions the core owns, one op family per module (each lists its ``OPS``)."""
