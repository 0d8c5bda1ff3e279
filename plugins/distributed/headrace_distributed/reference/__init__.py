"""NumPy references of the distributed ops, as functions of every rank's inputs."""
