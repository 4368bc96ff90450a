"""Functional neural-network ops (``oneflow.nn.functional``), mirroring ``torch.nn.functional``."""
