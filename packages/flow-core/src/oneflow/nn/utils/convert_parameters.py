"""Flattening parameters into one vector and back, as in ``torch.nn.utils.convert_parameters``."""
from ... import _C
from ..._ops.dtype_info import typename


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
    r"""Makes each of ``parameters`` (in order) a view of the next slice of the 1-D ``vec``.

    As in PyTorch, each parameter's ``.data`` is replaced: afterwards the parameters share ``vec``'s memory
    and take its dtype.

    Args:
        vec (Tensor): a single vector holding the values of all the parameters.
        parameters (Iterable[Tensor]): the parameters to set.
    """
    if not isinstance(vec, _C.TensorBase):
        raise TypeError(f"expected torch.Tensor, but got: {typename(type(vec))}")
    param_device = None
    pointer = 0
    for param in parameters:
        param_device = _check_param_device(param, param_device)
        num_param = param.numel()
        param.data = vec[pointer:pointer + num_param].view_as(param).data
        pointer += num_param
