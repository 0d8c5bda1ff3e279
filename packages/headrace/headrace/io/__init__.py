"""Saving and loading: variables' values, checkpoints and inference models (Fluid's
``fluid.io`` API), in PaddlePaddle's on-disk formats (reference/ir-wire-format.md).

- :mod:`.tensor_stream`: one tensor's binary stream, written and strictly validated.
- :mod:`.persistables`: ``save_vars``/``load_vars`` and the params/persistables shorthands.
- :mod:`.inference`: ``save_inference_model``/``load_inference_model``.
- :mod:`.atomic`: single files written atomically.
- :mod:`.checkpoint`: saves into a directory are all-or-nothing (one directory swap), names map
  to one file each, loads follow no links and check the save's manifest.
"""
from .atomic import AtomicFileSet, atomic_write, write_bytes
from .checkpoint import SaveError
from .inference import inference_program, load_inference_model, save_inference_model
from .persistables import (is_parameter, is_persistable, load_params, load_persistables,
                           load_vars, save_params, save_persistables, save_vars)
from .tensor_stream import (ModelFileError, decode_tensor, encode_tensor, read_tensor_file,
                            write_tensor)

__all__ = ["AtomicFileSet", "atomic_write", "write_bytes", "SaveError", "inference_program",
           "load_inference_model", "save_inference_model", "is_parameter", "is_persistable",
           "load_params", "load_persistables", "load_vars", "save_params", "save_persistables",
           "save_vars", "ModelFileError", "decode_tensor", "encode_tensor", "read_tensor_file",
           "write_tensor"]
