"""``stack_module_state`` (PyTorch's ``torch.func.stack_module_state``): the parameters and buffers of several
models of the same class, stacked along a new dim 0, to run an ensemble with ``vmap`` and ``functional_call``."""
from .._ops.index import stack

__all__ = ["stack_module_state"]


def _stacked_leaf(tensors, name):
    all_require = all(t.requires_grad for t in tensors)
    if not all_require and any(t.requires_grad for t in tensors):
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    stacked = stack(list(tensors))
    # a new leaf: the ensemble's parameters are trained as one tensor, apart from the models'
    return stacked.detach().requires_grad_() if all_require else stacked


def stack_module_state(models):
    """Returns ``(params, buffers)``: dicts from each parameter / buffer name to the models' tensors stacked along
    dim 0. Stacked parameters are new leaves that require grad when the models' parameters do.

    Raises RuntimeError when ``models`` is empty, mixes training and eval mode or mixes classes.
    """
    models = list(models)
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    if not all(type(m) is type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_params = [dict(m.named_parameters()) for m in models]
    params = {k: _stacked_leaf([p[k] for p in all_params], k) for k in all_params[0]}
    all_buffers = [dict(m.named_buffers()) for m in models]
    buffers = {k: _stacked_leaf([b[k] for b in all_buffers], k) for k in all_buffers[0]}
    return params, buffers
