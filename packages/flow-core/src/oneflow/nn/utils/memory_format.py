"""Converting the weights of (transposed) convolutions to another memory format
(``oneflow.nn.utils.convert_conv2d_weight_memory_format`` and its 3-D counterpart), as in PyTorch."""
from ..modules.conv import Conv2d, Conv3d, ConvTranspose2d, ConvTranspose3d

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def _convert_weights(module, conv_types, memory_format):
    if isinstance(module, conv_types):
        # a restrided copy replaces the data, so the Parameter (and any optimizer holding it) is kept
        module.weight.data = module.weight.detach().clone(memory_format=memory_format)
    for child in module.children():
        _convert_weights(child, conv_types, memory_format)
    return module


def convert_conv2d_weight_memory_format(module, memory_format):
    r"""Converts, recursively, the ``weight`` of every ``nn.Conv2d`` and ``nn.ConvTranspose2d`` in ``module``
    to ``memory_format`` (e.g. ``oneflow.channels_last``) in place. Other layers, whatever their memory
    format, are left as they are.

    Args:
        module (nn.Module): the module (or model) to convert.
        memory_format: the memory format to convert to.

    Returns:
        ``module``.
    """
    return _convert_weights(module, (Conv2d, ConvTranspose2d), memory_format)


def convert_conv3d_weight_memory_format(module, memory_format):
    r"""Converts, recursively, the ``weight`` of every ``nn.Conv3d`` and ``nn.ConvTranspose3d`` in ``module``
    to ``memory_format`` (e.g. ``oneflow.channels_last_3d``) in place.

    Args:
        module (nn.Module): the module (or model) to convert.
        memory_format: the memory format to convert to.

    Returns:
        ``module``.
    """
    return _convert_weights(module, (Conv3d, ConvTranspose3d), memory_format)
