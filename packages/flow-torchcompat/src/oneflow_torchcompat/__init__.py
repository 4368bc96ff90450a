"""flow-torchcompat: run PyTorch programs on oneflow.

- ``oneflow.mock_torch`` (:mod:`oneflow_torchcompat.mock_torch`): ``import torch`` gives oneflow;
- ``oneflow.framework.infer_compiler.compile_from_torch``: an existing PyTorch module run on oneflow's kernels,
  sharing its parameters' memory.

Zero-copy tensor exchange (``oneflow.utils.tensor.from_torch``/``to_torch``, DLPack) is in flow-core.
"""
__version__ = "0.1.0"
