"""Saving and loading: variables' values, checkpoints and inference models (Fluid's
``fluid.io`` API), in PaddlePaddle's on-disk formats (reference/ir-wire-format.md).

- :mod:`.tensor_stream`: one tensor's binary stream, written and strictly validated.
- :mod:`.persistables`: ``save_vars``/``load_vars`` and the params/persistables shorthands.
- :mod:`.inference`: ``save_inference_model``/``load_inference_model``.
- :mod:`.atomic`: every write is atomic; an interrupted save leaves the previous files intact.
"""
from .atomic import AtomicFileSet, atomic_write, write_bytes
from .inference import inference_program, load_inference_model, save_inference_model
from .persistables import (is_parameter, is_persistable, load_params, load_persistables,
                           load_vars, save_params, save_persistables, save_vars)
from .tensor_stream import (ModelFileError, decode_tensor, encode_tensor, read_tensor_file,
                            write_tensor)

__all__ = ["AtomicFileSet", "atomic_write", "write_bytes", "inference_program",
           "load_inference_model", "save_inference_model", "is_parameter", "is_persistable",
           "load_params", "load_persistables", "load_vars", "save_params", "save_persistables",
           "save_vars", "ModelFileError", "decode_tensor", "encode_tensor", "read_tensor_file",
           "write_tensor"]
