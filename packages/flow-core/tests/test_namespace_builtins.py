"""oneflow/__init__.py rebinds builtin names, as torch's namespace does (bool, int, float are dtypes; abs, max,
sum ... are ops): its own functions must reach the builtins another way (set_anomaly_enabled once called the
dtype flow.bool)."""
import ast
import builtins
import inspect

import numpy as np
import pytest
import torch

import oneflow as flow


def test_set_anomaly_enabled_like_torch():
    for lib in (flow, torch):
        try:
            lib.set_anomaly_enabled(True)
            assert lib.is_anomaly_enabled() is True and lib.is_anomaly_check_nan_enabled() is True
            lib.set_anomaly_enabled(enabled=True, check_nan=False)
            assert lib.is_anomaly_enabled() is True and lib.is_anomaly_check_nan_enabled() is False
        finally:
            lib.set_anomaly_enabled(False)
        assert lib.is_anomaly_enabled() is False


@pytest.mark.parametrize("args", [(1,), (True, 0), (True, None), (np.bool_(True),)])
def test_set_anomaly_enabled_takes_only_bools_like_torch(args):
    messages = []
    for lib in (flow, torch):
        with pytest.raises(TypeError) as e:
            lib.set_anomaly_enabled(*args)
        messages.append(str(e.value))
    assert messages[0] == messages[1]
    assert flow.is_anomaly_enabled() is False


def test_anomaly_mode_set_this_way_detects_nan_gradients():
    x = flow.tensor([0.0], requires_grad=True)
    flow.set_anomaly_enabled(True)
    try:
        y = flow.sqrt(x) * 0  # the gradient of sqrt at 0 is inf; times 0 gives nan
        try:
            y.sum().backward()
        except RuntimeError as e:
            assert "nan" in str(e).lower()
        else:
            raise AssertionError("anomaly mode let a NaN gradient through")
    finally:
        flow.set_anomaly_enabled(False)


def _names_bound_in(fn):
    bound = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
    return bound


def test_init_functions_use_no_shadowed_builtin():
    shadowed = {n for n, v in vars(flow).items() if n in vars(builtins) and not n.startswith("__")
                and v is not getattr(builtins, n)}
    assert {"bool", "int", "float", "max", "sum"} <= shadowed  # the rebinding this test is about
    tree = ast.parse(inspect.getsource(flow))
    offenders = []
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            bound = _names_bound_in(fn)
            offenders += [f"{getattr(fn, 'name', 'lambda')} uses {node.id} (line {node.lineno})"
                          for node in ast.walk(fn) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
                          and node.id in shadowed and node.id not in bound]
    assert offenders == []
