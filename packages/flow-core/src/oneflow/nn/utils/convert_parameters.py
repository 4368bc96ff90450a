"""Flattening parameters into one vector and back, as in ``torch.nn.utils.convert_parameters``."""
from ... import _C


def _check_param_device(param, old_param_device):
    dev = param.device
    if old_param_device is None:
        return dev
    if dev != old_param_device:
        raise TypeError("Found two parameters on different devices, this is currently not supported.")
    return old_param_device


def parameters_to_vector(parameters):
    """Concatenates the flattened ``parameters`` into one 1-D tensor (differentiable)."""
    import oneflow

    param_device = None
    vec = []
    for param in parameters:
        param_device = _check_param_device(param, param_device)
        vec.append(param.view(-1) if param.is_contiguous() else param.reshape(-1))
    return oneflow.cat(vec)


def vector_to_parameters(vec, parameters):
    """Copies consecutive slices of the 1-D ``vec`` into ``parameters`` (in place, in order)."""
    import oneflow

    if not isinstance(vec, _C.TensorBase):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    param_device = None
    pointer = 0
    with oneflow.no_grad():
        for param in parameters:
            param_device = _check_param_device(param, param_device)
            num_param = param.numel()
            param.copy_(vec[pointer:pointer + num_param].view_as(param))
            pointer += num_param
