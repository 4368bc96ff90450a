"""Spectral normalization as a forward pre-hook (PyTorch's ``torch.nn.utils.spectral_norm``): the weight is
divided by its largest singular value, estimated by power iteration (one step per training forward)."""
from ..._ops.linalg import dot, mv
from ...autograd import no_grad
from .. import functional as F
from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..parameter import Parameter, UninitializedParameter
from . import _prehooks

__all__ = ["SpectralNorm", "spectral_norm", "remove_spectral_norm"]


def weight_matrix(weight, dim):
    """``weight`` as the matrix whose spectral norm is taken: ``dim`` first, the other dims flattened."""
    if dim != 0:
        weight = weight.permute(dim, *[d for d in range(weight.dim()) if d != dim])
    return weight.reshape(weight.size(0), -1)


class SpectralNorm:
    """The forward pre-hook behind ``spectral_norm``. Buffers ``<name>_u`` and ``<name>_v`` hold the power
    iteration's left and right singular vector estimates; the parameter is ``<name>_orig``."""

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.name = name
        self.dim = dim
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight):
        return weight_matrix(weight, self.dim)

    def compute_weight(self, module, do_power_iteration):
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                # u and v are updated in place (they are buffers), then cloned so that a second forward
                # before backward does not modify what the first one saved
                for _ in range(self.n_power_iterations):
                    v.copy_(F.normalize(mv(mat.t(), u), dim=0, eps=self.eps))
                    u.copy_(F.normalize(mv(mat, v), dim=0, eps=self.eps))
                u, v = u.clone(), v.clone()
        sigma = dot(u, mv(mat, v))
        return weight / sigma

    @staticmethod
    def apply(module, name, n_power_iterations, dim, eps):
        _prehooks.check_unregistered(module, SpectralNorm, name, "spectral_norm")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        if isinstance(weight, UninitializedParameter):
            raise ValueError("The module passed to `SpectralNorm` can't have uninitialized parameters. Make sure "
                             "to run the dummy forward before applying spectral normalization")
        with no_grad():
            h, w = fn.reshape_weight_to_matrix(weight).shape
            u = F.normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=fn.eps)
            v = F.normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        # `<name>` stays readable (initialisers and the like expect it), as a plain tensor attribute
        setattr(module, fn.name, weight.detach())
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module):
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Divides ``module.<name>`` by its spectral norm before every forward, estimated with
    ``n_power_iterations`` power-iteration steps per training forward (none in eval mode). ``dim`` is the
    output dimension (default 0, 1 for transposed convolutions). Returns ``module``."""
    if dim is None:
        transposed = (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)
        dim = 1 if isinstance(module, transposed) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module, name="weight"):
    """Folds the spectral normalization of ``module.<name>`` back into a plain parameter. Returns ``module``."""
    return _prehooks.remove(module, SpectralNorm, name, "spectral_norm")
