"""headrace-nn: neural-network layers: softmax, losses, conv, pooling, normalization, dropout,
embeddings, metrics, sequences."""
