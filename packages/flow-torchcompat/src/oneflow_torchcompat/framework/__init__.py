"""``oneflow.framework`` as flow-torchcompat provides it: ``oneflow.framework.infer_compiler``."""
from . import infer_compiler  # noqa: F401  (flow.framework.infer_compiler without an import of its own)
