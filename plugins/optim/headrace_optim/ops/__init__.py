"""Op definitions of the optim family, one op family per module (each lists its ``OPS``)."""
