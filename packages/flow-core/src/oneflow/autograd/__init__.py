"""Automatic differentiation: ``backward``, ``grad``, grad-mode context managers and custom ``Function``s.

The engine is C++ (``csrc/autograd``); this module is its Python face.
"""
from . import anomaly_mode, forward_ad, functional, grad_mode, graph, variable  # noqa: F401
# the engine's private state too: checkpointing and the profiler reach it as oneflow.autograd._*
from ._engine import (  # noqa: F401
    _checkpoint_validity, _create_graph_warned, _engine_observers, _is_checkpoint_valid, _run_engine, _state,
    backward, grad)
from .anomaly_mode import detect_anomaly, set_detect_anomaly  # noqa: F401
from .function import Function, FunctionCtx, once_differentiable  # noqa: F401
from .grad_mode import (  # noqa: F401
    _GradModeBase, enable_grad, inference_mode, is_multithreading_enabled, no_grad, set_grad_enabled,
    set_multithreading_enabled)
from .gradcheck import GradcheckError, gradcheck, gradgradcheck  # noqa: F401
from .variable import Variable  # noqa: F401

__all__ = ["backward", "grad", "graph", "Function", "no_grad", "enable_grad", "set_grad_enabled", "inference_mode",
           "FunctionCtx", "once_differentiable", "gradcheck", "gradgradcheck", "Variable", "detect_anomaly",
           "set_detect_anomaly"]
