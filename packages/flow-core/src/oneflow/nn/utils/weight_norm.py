"""Weight normalization as a forward pre-hook (PyTorch's ``torch.nn.utils.weight_norm``): a parameter ``w``
is replaced by a magnitude ``w_g`` and a direction ``w_v``, and recomputed as ``w_g * w_v / ||w_v||`` before
every forward."""
import warnings

from ..parameter import Parameter, UninitializedParameter
from . import _prehooks

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm", "norm_except_dim"]


def norm_except_dim(v, pow=2, dim=0):
    """The ``pow``-norm of ``v`` over every dimension but ``dim`` (``dim=-1``: over all of it), shaped to
    broadcast against ``v``."""
    if dim == -1:
        return v.norm(pow)
    if dim == 0:
        return v.contiguous().view(v.size(0), -1).norm(pow, dim=1).view(v.size(0), *([1] * (v.dim() - 1)))
    if dim == v.dim() - 1:
        return v.contiguous().view(-1, v.size(-1)).norm(pow, dim=0).view(*([1] * (v.dim() - 1)), v.size(-1))
    return norm_except_dim(v.transpose(0, dim), pow, 0).transpose(0, dim)


class WeightNorm:
    """The forward pre-hook behind ``weight_norm``."""

    def __init__(self, name, dim):
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module):
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return v * (g / norm_except_dim(v, 2, self.dim))

    @staticmethod
    def apply(module, name, dim):
        _prehooks.check_unregistered(module, WeightNorm, name, "weight_norm")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        if isinstance(weight, UninitializedParameter):
            raise ValueError("The module passed to `WeightNorm` can't have uninitialized parameters. Make sure to "
                             "run the dummy forward before applying weight normalization")
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, 2, fn.dim).detach()))
        module.register_parameter(name + "_v", Parameter(weight.detach()))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module):
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    """Reparametrizes ``module.<name>`` as ``<name>_g * <name>_v / ||<name>_v||`` (norm over every dim but
    ``dim``; ``dim=None``: over the whole tensor), recomputed before each forward. Returns ``module``.

    Deprecated in PyTorch in favour of ``torch.nn.utils.parametrizations.weight_norm``; warns likewise."""
    warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                  "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=2)
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name="weight"):
    """Folds the weight normalization of ``module.<name>`` back into a plain parameter. Returns ``module``."""
    return _prehooks.remove(module, WeightNorm, name, "weight_norm")
