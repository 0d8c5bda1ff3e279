"""Saving and loading: variables' values, checkpoints and inference models (Fluid's
``fluid.io`` API), in PaddlePaddle's on-disk formats (reference/ir-wire-format.md).

- :mod:`.tensor_stream`: one tensor's binary stream, written and strictly validated.
- :mod:`.persistables`: ``save_vars``/``load_vars`` and the params/persistables shorthands.
- :mod:`.inference`: ``save_inference_model``/``load_inference_model``.
- :mod:`.atomic`: single files written atomically.
- :mod:`.checkpoint`: saves into a directory are all-or-nothing (one directory swap), names map
  to one file each, loads follow no links and check the save's manifest.

Feeding data (Fluid's ``fluid.io.DataLoader`` and ``paddle.reader``):

- :mod:`.dataloader`: ``DataLoader.from_generator``, batches prefetched by a background thread.
- :mod:`.feeder`: ``DataFeeder``, samples to checked batches (LoD for variable-length ones).
- :mod:`.reader`: reader decorators (``batch``, ``shuffle``, ``buffered``, ``compose``, ...).
- :mod:`.train_loop`: ``train_loop``/``test_loop``, passes with a progress bar and metrics.
"""
from .atomic import AtomicFileSet, atomic_write, write_bytes
from . import reader
from .checkpoint import SaveError
from .dataloader import DataLoader, DataLoaderError
from .feeder import DataFeeder
from .inference import inference_program, load_inference_model, save_inference_model
from .persistables import (is_parameter, is_persistable, load_params, load_persistables,
                           load_vars, save_params, save_persistables, save_vars)
from .tensor_stream import (ModelFileError, decode_tensor, encode_tensor, read_tensor_file,
                            write_tensor)
from .train_loop import test_loop, train_loop

__all__ = ["AtomicFileSet", "atomic_write", "write_bytes", "SaveError", "inference_program",
           "load_inference_model", "save_inference_model", "is_parameter", "is_persistable",
           "load_params", "load_persistables", "load_vars", "save_params", "save_persistables",
           "save_vars", "ModelFileError", "decode_tensor", "encode_tensor", "read_tensor_file",
           "write_tensor", "reader", "DataLoader", "DataLoaderError", "DataFeeder", "test_loop",
           "train_loop"]
