"""BatchNorm1d/2d/3d, InstanceNorm1d/2d/3d, LayerNorm, GroupNorm and LocalResponseNorm."""
import numbers
import warnings

from ... import _C
from .. import functional as F
from .. import init
from ..parameter import Parameter, UninitializedBuffer, UninitializedParameter
from .lazy import LazyModuleMixin
from .module import Module, _no_grad
from ._layer_utils import _factory

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d",
           "LayerNorm", "GroupNorm", "LocalResponseNorm", "RMSNorm", "LazyBatchNorm1d", "LazyBatchNorm2d",
           "LazyBatchNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d", "SyncBatchNorm",
           "CrossMapLRN2d"]

_ops = _C.ops


def _flow():
    import oneflow

    return oneflow


def _register_affine(module, shape, affine, bias, kw):
    """weight (and bias unless ``bias=False``) of ``shape`` when ``affine``, else both registered as None."""
    flow = _flow()
    module.register_parameter("weight", Parameter(flow.empty(shape, **kw)) if affine else None)
    module.register_parameter("bias", Parameter(flow.empty(shape, **kw)) if affine and bias else None)


def _reset_affine(module):
    if module.weight is not None:
        init.ones_(module.weight)
    if module.bias is not None:
        init.zeros_(module.bias)


class _NormBase(Module):
    """Common base of BatchNorm and InstanceNorm: affine parameters and running statistics buffers."""

    _version = 2
    __constants__ = ["track_running_stats", "momentum", "eps", "num_features", "affine"]

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None, *, bias=True):
        super().__init__()
        flow = _flow()
        kw = _factory(device, dtype)
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _register_affine(self, num_features, self.affine, bias, kw)
        if self.track_running_stats:
            self.register_buffer("running_mean", flow.zeros(num_features, **kw))
            self.register_buffer("running_var", flow.ones(num_features, **kw))
            dev = {"device": device} if device is not None else {}
            self.register_buffer("num_batches_tracked", flow.tensor(0, dtype=flow.int64, **dev))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self):
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        _reset_affine(self)

    def _check_input_dim(self, input):
        raise NotImplementedError

    def extra_repr(self):
        return ("{num_features}, eps={eps}, momentum={momentum}, affine={affine}, bias={use_bias}, "
                "track_running_stats={track_running_stats}".format(**self.__dict__, use_bias=self.bias is not None))

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs, assign=False):
        version = local_metadata.get("version", None)
        if (version is None or version < 2) and self.track_running_stats:
            # checkpoints from before num_batches_tracked existed: keep the current counter
            key = prefix + "num_batches_tracked"
            if key not in state_dict:
                flow = _flow()
                state_dict[key] = (self.num_batches_tracked if self.num_batches_tracked is not None
                                   else flow.tensor(0, dtype=flow.int64))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs, assign)


class _BatchNorm(_NormBase):
    def forward(self, input):
        self._check_input_dim(input)
        if self.momentum is None:
            exponential_average_factor = 0.0
        else:
            exponential_average_factor = self.momentum
        training = self.training
        if training and self.track_running_stats:
            nbt = self.num_batches_tracked
            if nbt is not None:
                nbt.add_(1)
                if self.momentum is None:  # cumulative moving average
                    exponential_average_factor = 1.0 / float(nbt)
        if training:
            bn_training = True
        else:
            bn_training = (self.running_mean is None) and (self.running_var is None)
        use_stats = not training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if use_stats else None,
                            self.running_var if use_stats else None, self.weight, self.bias, bn_training,
                            exponential_average_factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch normalisation over (N, C) or (N, C, L) inputs."""

    def _check_input_dim(self, input):
        if input.dim() != 2 and input.dim() != 3:
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch normalisation over (N, C, H, W) inputs."""

    def _check_input_dim(self, input):
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    """Batch normalisation over (N, C, D, H, W) inputs."""

    def _check_input_dim(self, input):
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


class SyncBatchNorm(_BatchNorm):
    """Batch normalisation whose statistics are taken over the whole process group's batch (PyTorch's
    ``nn.SyncBatchNorm``). This package runs in one process, where the group's batch is the local one, so
    it normalises as ``BatchNorm`` does over inputs of any rank >= 2; ``convert_sync_batchnorm`` swaps it into
    a model the way distributed training scripts do."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_group=None, device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with every BatchNorm layer inside it replaced by a SyncBatchNorm sharing its parameters
        and running statistics (the module itself when it is one)."""
        out = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            out = cls(module.num_features, module.eps, module.momentum, module.affine, module.track_running_stats,
                      process_group)
            if module.affine:
                out.weight, out.bias = module.weight, module.bias
            out.running_mean, out.running_var = module.running_mean, module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
            if hasattr(module, "qconfig"):
                out.qconfig = module.qconfig
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out


class _InstanceNorm(_NormBase):
    _no_batch_dim = 2

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False, device=None,
                 dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def _check_input_dim(self, input):
        d = self._no_batch_dim
        if input.dim() not in (d, d + 1):
            raise ValueError(f"expected {d}D or {d + 1}D input (got {input.dim()}D input)")

    def _apply_instance_norm(self, input):
        return F.instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                               self.training or not self.track_running_stats,
                               self.momentum if self.momentum is not None else 0.0, self.eps)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs, assign=False):
        version = local_metadata.get("version", None)
        if version is None and not self.track_running_stats:
            # old InstanceNorm checkpoints saved running stats even when not tracking them
            running_stats_keys = []
            for name in ("running_mean", "running_var"):
                key = prefix + name
                if key in state_dict:
                    running_stats_keys.append(key)
            if len(running_stats_keys) > 0:
                error_msgs.append(
                    "Unexpected running stats buffer(s) {names} for {klass} with track_running_stats=False. If "
                    "state_dict is a checkpoint saved before 0.4.0, this may be expected because {klass} does not "
                    "track running stats by default since 0.4.0. Please remove these keys from state_dict. If the "
                    "running stats are actually needed, instead set track_running_stats=True in {klass} to enable "
                    "them. See the documentation of {klass} for details.".format(
                        names=" and ".join(f'"{k}"' for k in running_stats_keys), klass=self.__class__.__name__))
                for key in running_stats_keys:
                    state_dict.pop(key)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs, assign)

    def forward(self, input):
        self._check_input_dim(input)
        feature_dim = input.dim() - self._no_batch_dim
        if input.size(feature_dim) != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match num_features "
                                 f"({self.num_features}), but got: {input.size(feature_dim)}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. You can silence this "
                          "warning by not passing in num_features, which is not used because affine=False")
        if input.dim() == self._no_batch_dim:
            return _ops.squeeze_dim(self._apply_instance_norm(_ops.unsqueeze(input, 0)), 0)
        return self._apply_instance_norm(input)


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation over (N, C, L) or (C, L) inputs."""

    _no_batch_dim = 2


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation over (N, C, H, W) or (C, H, W) inputs."""

    _no_batch_dim = 3


class InstanceNorm3d(_InstanceNorm):
    """Instance normalisation over (N, C, D, H, W) or (C, D, H, W) inputs."""

    _no_batch_dim = 4


class _LazyNormBase(LazyModuleMixin, _NormBase):
    """``num_features`` from the first input's channel dim; affine parameters and running statistics are
    placeholders until then."""

    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None, *,
                 bias=True):
        # affine/track_running_stats False here: the placeholders replace the tensors
        super().__init__(0, eps, momentum, False, False, device, dtype, bias=False)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if self.affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if self.track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            dev = {"device": device} if device is not None else {}
            self.num_batches_tracked = _flow().tensor(0, dtype=_flow().int64, **dev)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def _feature_dim(self, input):
        return 1

    def initialize_parameters(self, input):
        """Materialises the placeholders for the input's channel count, then initialises them."""
        if self.has_uninitialized_params():
            self.num_features = input.shape[self._feature_dim(input)]
            with _no_grad():
                for t in (self.weight, self.bias, self.running_mean, self.running_var):
                    if t is not None:
                        t.materialize((self.num_features,))
                self.reset_parameters()


class LazyBatchNorm1d(_LazyNormBase, _BatchNorm):
    """A BatchNorm1d whose ``num_features`` is inferred from the first input; it then becomes a
    ``BatchNorm1d``."""

    cls_to_become = BatchNorm1d
    _check_input_dim = BatchNorm1d._check_input_dim


class LazyBatchNorm2d(_LazyNormBase, _BatchNorm):
    """A BatchNorm2d whose ``num_features`` is inferred from the first input; it then becomes a
    ``BatchNorm2d``."""

    cls_to_become = BatchNorm2d
    _check_input_dim = BatchNorm2d._check_input_dim


class LazyBatchNorm3d(_LazyNormBase, _BatchNorm):
    """A BatchNorm3d whose ``num_features`` is inferred from the first input; it then becomes a
    ``BatchNorm3d``."""

    cls_to_become = BatchNorm3d
    _check_input_dim = BatchNorm3d._check_input_dim


class _LazyInstanceNorm(_LazyNormBase, _InstanceNorm):
    def _feature_dim(self, input):
        # channels of batched and unbatched inputs alike (torch always reads input.shape[1])
        return input.dim() - self._no_batch_dim


class LazyInstanceNorm1d(_LazyInstanceNorm):
    """An InstanceNorm1d whose ``num_features`` is inferred from the first input; it then becomes an
    ``InstanceNorm1d``."""

    cls_to_become = InstanceNorm1d
    _no_batch_dim = 2


class LazyInstanceNorm2d(_LazyInstanceNorm):
    """An InstanceNorm2d whose ``num_features`` is inferred from the first input; it then becomes an
    ``InstanceNorm2d``."""

    cls_to_become = InstanceNorm2d
    _no_batch_dim = 3


class LazyInstanceNorm3d(_LazyInstanceNorm):
    """An InstanceNorm3d whose ``num_features`` is inferred from the first input; it then becomes an
    ``InstanceNorm3d``."""

    cls_to_become = InstanceNorm3d
    _no_batch_dim = 4


class LayerNorm(Module):
    """Normalises over the trailing ``normalized_shape`` dims, with an optional elementwise affine."""

    __constants__ = ["normalized_shape", "eps", "elementwise_affine"]

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        super().__init__()
        kw = _factory(device, dtype)
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _register_affine(self, self.normalized_shape, self.elementwise_affine, bias, kw)
        self.reset_parameters()

    def reset_parameters(self):
        _reset_affine(self)

    def forward(self, input):
        return _ops.native_layer_norm(input, list(self.normalized_shape), self.weight, self.bias, self.eps)[0]

    def extra_repr(self):
        return ("{normalized_shape}, eps={eps}, elementwise_affine={elementwise_affine}, "
                "bias={use_bias}".format(**self.__dict__, use_bias=self.bias is not None))


class GroupNorm(Module):
    """Normalises each of ``num_groups`` channel groups per sample, then a per-channel affine."""

    __constants__ = ["num_groups", "num_channels", "eps", "affine"]

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        kw = _factory(device, dtype)
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _register_affine(self, num_channels, self.affine, bias, kw)
        self.reset_parameters()

    def reset_parameters(self):
        _reset_affine(self)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return ("{num_groups}, {num_channels}, eps={eps}, affine={affine}, "
                "bias={use_bias}".format(**self.__dict__, use_bias=self.bias is not None))


class _ResponseNormBase(Module):
    """The parameters and repr the two local-response-norm layers share (not a PyTorch class)."""

    __constants__ = ["size", "alpha", "beta", "k"]

    def __init__(self, size, alpha, beta, k):
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def extra_repr(self):
        return "{size}, alpha={alpha}, beta={beta}, k={k}".format(**self.__dict__)


class LocalResponseNorm(_ResponseNormBase):
    """Local response normalisation across channels:
    ``b_c = a_c / (k + alpha / n * sum_{c' in window} a_{c'}^2) ^ beta``."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__(size, alpha, beta, k)

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)


class CrossMapLRN2d(_ResponseNormBase):
    """PyTorch's legacy local response normalisation across the channels of a 4-D (N, C, H, W) input,
    ``b_c = a_c * (k + alpha / size * sum_{c' in window} a_{c'}^2) ^ -beta``, with its reference kernel's
    windows and hand-written backward (which differ slightly from LocalResponseNorm's): the registry op
    ``_cross_map_lrn2d`` (ops/nnops_norm.cpp)."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__(size, alpha, beta, k)

    def forward(self, input):
        return _ops._cross_map_lrn2d(input, self.size, self.alpha, self.beta, self.k)


class RMSNorm(Module):
    """Root-mean-square normalisation over the trailing ``normalized_shape`` dims, with an optional weight."""

    __constants__ = ["normalized_shape", "eps", "elementwise_affine"]

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if self.elementwise_affine:
            self.weight = Parameter(_flow().empty(self.normalized_shape, **_factory(device, dtype)))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self):
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return "{normalized_shape}, eps={eps}, elementwise_affine={elementwise_affine}".format(**self.__dict__)
