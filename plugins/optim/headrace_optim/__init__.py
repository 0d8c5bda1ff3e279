"""headrace-optim: optimizer update ops: sgd, momentum, adam, adagrad, rmsprop."""
