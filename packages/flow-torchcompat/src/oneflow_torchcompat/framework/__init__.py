"""``oneflow.framework`` as flow-torchcompat provides it: ``oneflow.framework.infer_compiler``."""
