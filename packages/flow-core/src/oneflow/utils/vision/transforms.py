"""Image transforms (torchvision-like) for tensors C×H×W and uint8 NumPy images H×W(×C).

Random transforms draw from oneflow's default generator, so ``oneflow.manual_seed`` makes them reproducible
(in DataLoader workers each worker is seeded with ``base_seed + worker_id``).
"""
import numbers

import numpy as np

__all__ = ["Compose", "ToTensor", "Normalize", "RandomCrop", "CenterCrop", "RandomHorizontalFlip", "Lambda",
           "Resize"]


def _C():
    from ... import _C as c

    return c


def _is_tensor(x):
    return isinstance(x, _C().TensorBase)


def _rand():
    from ..._ops.creation_random import rand

    return float(rand(1).item())


def _randint(high):
    from ..._ops.creation_random import randint

    return int(randint(0, high, (1,)).item())


def _pair(size, name):
    if isinstance(size, numbers.Number):
        return int(size), int(size)
    if isinstance(size, (tuple, list)) and len(size) == 1:
        return int(size[0]), int(size[0])
    if isinstance(size, (tuple, list)) and len(size) == 2:
        return int(size[0]), int(size[1])
    raise ValueError(f"{name}: please provide only two dimensions (h, w) for size.")


def _hw(img):
    """(height, width) of a tensor (..., H, W) or a NumPy image H×W(×C)."""
    if _is_tensor(img):
        return int(img.shape[-2]), int(img.shape[-1])
    return int(img.shape[0]), int(img.shape[1])


class Compose:
    """Applies ``transforms`` one after another."""

    def __init__(self, transforms):
        self.transforms = list(transforms)

    def __call__(self, img):
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self):
        lines = "".join(f"\n    {t}" for t in self.transforms)
        return f"{self.__class__.__name__}({lines}\n)"


class ToTensor:
    """A NumPy image H×W×C (or H×W, or a PIL image) to a tensor C×H×W; uint8 values are scaled to float32 [0, 1],
    other dtypes keep their values."""

    def __call__(self, pic):
        if not isinstance(pic, np.ndarray):
            if type(pic).__module__.startswith("PIL."):
                pic = np.asarray(pic)
            else:
                raise TypeError(f"pic should be PIL Image or ndarray. Got {type(pic)}")
        if pic.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
        if pic.ndim == 2:
            pic = pic[:, :, None]
        chw = np.ascontiguousarray(pic.transpose(2, 0, 1))
        if chw.dtype == np.uint8:
            chw = chw.astype(np.float32) / np.float32(255)
        elif chw.dtype not in (np.float32, np.float64, np.float16, np.int64, np.int32, np.int16, np.int8, np.bool_):
            chw = chw.astype(np.float32)
        return _C()._from_numpy(chw)

    def __repr__(self):
        return f"{self.__class__.__name__}()"


class Normalize:
    """``(x - mean[c]) / std[c]`` per channel of a float tensor (..., C, H, W)."""

    def __init__(self, mean, std, inplace=False):
        self.mean = mean
        self.std = std
        self.inplace = inplace

    def __call__(self, tensor):
        if not _is_tensor(tensor):
            raise TypeError(f"img should be Tensor Image. Got {type(tensor)}")
        if not tensor.dtype.is_floating_point:
            raise TypeError(f"Input tensor should be a float tensor. Got {tensor.dtype}.")
        if tensor.dim() < 3:
            raise ValueError(f"Expected tensor to be a tensor image of size (..., C, H, W). Got tensor.size() = "
                             f"{tuple(tensor.shape)}")
        from ..._ops.creation import as_tensor

        dt = tensor.dtype
        mean = as_tensor(np.asarray(self.mean, dtype=np.float64), dtype=dt)
        std = as_tensor(np.asarray(self.std, dtype=np.float64), dtype=dt)
        if bool((std == 0).any()):
            raise ValueError(f"std evaluated to zero after conversion to {dt}, leading to division by zero.")
        if mean.dim() == 1:
            mean = mean.view(-1, 1, 1)
        if std.dim() == 1:
            std = std.view(-1, 1, 1)
        if self.inplace:
            return tensor.sub_(mean).div_(std)
        return (tensor - mean) / std

    def __repr__(self):
        return f"{self.__class__.__name__}(mean={self.mean}, std={self.std})"


def _crop(img, top, left, h, w):
    if _is_tensor(img):
        return img[..., top:top + h, left:left + w]
    return img[top:top + h, left:left + w]


_NP_PAD_MODES = {"constant": "constant", "edge": "edge", "reflect": "reflect", "symmetric": "symmetric"}


def _pad(img, padding, fill=0, padding_mode="constant"):
    """Pads the spatial dims by ``padding`` = int, (lr, tb) or (left, top, right, bottom), as torchvision."""
    if padding_mode not in _NP_PAD_MODES:
        raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
    if isinstance(padding, numbers.Number):
        left = t = r = b = int(padding)
    elif len(padding) == 1:
        left = t = r = b = int(padding[0])
    elif len(padding) == 2:
        left, t = int(padding[0]), int(padding[1])
        r, b = left, t
    elif len(padding) == 4:
        left, t, r, b = (int(p) for p in padding)
    else:
        raise ValueError(f"Padding must be an int or a 1, 2, or 4 element tuple, not a {len(padding)} element tuple")
    tensor = _is_tensor(img)
    a = img.detach().numpy() if tensor else img
    # spatial dims last in a tensor (..., C, H, W), first in an array (H, W, C)
    width = [(0, 0)] * (a.ndim - 2) + [(t, b), (left, r)] if tensor else [(t, b), (left, r)] + [(0, 0)] * (a.ndim - 2)
    if padding_mode == "constant" and isinstance(fill, (tuple, list)):
        # one fill value per channel, as torchvision: the border takes the channel's value
        out = np.empty(tuple(n + lo + hi for n, (lo, hi) in zip(a.shape, width)), dtype=a.dtype)
        per_channel = np.asarray(fill, dtype=a.dtype)
        out[...] = per_channel.reshape(-1, 1, 1) if tensor and a.ndim >= 3 else per_channel
        out[tuple(slice(lo, lo + n) for n, (lo, _) in zip(a.shape, width))] = a
    else:
        kw = {"constant_values": fill} if padding_mode == "constant" else {}
        out = np.pad(a, width, mode=_NP_PAD_MODES[padding_mode], **kw)
    return _C()._from_numpy(np.ascontiguousarray(out)) if tensor else out


class RandomCrop:
    """Crops a random ``size`` (h, w) window, after optional ``padding`` (int or 2/4-tuple; ``fill`` and
    ``padding_mode`` as torchvision); ``pad_if_needed`` pads images smaller than ``size``."""

    def __init__(self, size, padding=None, pad_if_needed=False, fill=0, padding_mode="constant"):
        self.size = _pair(size, "RandomCrop")
        self.padding = padding
        self.pad_if_needed = pad_if_needed
        self.fill = fill
        self.padding_mode = padding_mode

    def __call__(self, img):
        if self.padding is not None:
            img = _pad(img, self.padding, self.fill, self.padding_mode)
        h, w = _hw(img)
        th, tw = self.size
        if self.pad_if_needed and w < tw:
            img = _pad(img, [tw - w, 0], self.fill, self.padding_mode)
        if self.pad_if_needed and h < th:
            img = _pad(img, [0, th - h], self.fill, self.padding_mode)
        h, w = _hw(img)
        if h < th or w < tw:
            raise ValueError(f"Required crop size {(th, tw)} is larger than input image size {(h, w)}")
        top = _randint(h - th + 1)
        left = _randint(w - tw + 1)
        return _crop(img, top, left, th, tw)

    def __repr__(self):
        return f"{self.__class__.__name__}(size={self.size}, padding={self.padding})"


class CenterCrop:
    """Crops the central ``size`` (h, w) window."""

    def __init__(self, size):
        self.size = _pair(size, "CenterCrop")

    def __call__(self, img):
        h, w = _hw(img)
        th, tw = self.size
        if h < th or w < tw:  # as torchvision: pad with zeros around the image to the crop size first
            pw, ph = max(tw - w, 0), max(th - h, 0)
            img = _pad(img, [pw // 2, ph // 2, (pw + 1) // 2, (ph + 1) // 2])
            h, w = _hw(img)
        return _crop(img, int(round((h - th) / 2.0)), int(round((w - tw) / 2.0)), th, tw)

    def __repr__(self):
        return f"{self.__class__.__name__}(size={self.size})"


class RandomHorizontalFlip:
    """Mirrors the image left-right with probability ``p``."""

    def __init__(self, p=0.5):
        self.p = p

    def __call__(self, img):
        if _rand() < self.p:
            if _is_tensor(img):
                import oneflow

                return oneflow.flip(img, [-1])
            return np.ascontiguousarray(img[:, ::-1])
        return img

    def __repr__(self):
        return f"{self.__class__.__name__}(p={self.p})"


class Resize:
    """Resizes a float tensor (..., C, H, W) to ``size`` (h, w), or its shorter side to ``size`` keeping the aspect
    ratio, by bilinear interpolation (``align_corners=False``)."""

    def __init__(self, size, interpolation="bilinear"):
        if interpolation not in ("bilinear", "nearest", "bicubic"):
            raise ValueError(f"Resize: unsupported interpolation {interpolation!r}")
        self.size = size
        self.interpolation = interpolation

    def __call__(self, img):
        if not _is_tensor(img):
            img = ToTensor()(img)
        h, w = _hw(img)
        if isinstance(self.size, numbers.Number) or len(self.size) == 1:
            s = int(self.size if isinstance(self.size, numbers.Number) else self.size[0])
            size = (s, int(s * w / h)) if h <= w else (int(s * h / w), s)
        else:
            size = (int(self.size[0]), int(self.size[1]))
        from ...nn import functional as F

        x = img if img.dim() == 4 else img.unsqueeze(0)
        kw = {} if self.interpolation == "nearest" else {"align_corners": False}
        y = F.interpolate(x, size=size, mode=self.interpolation, **kw)
        return y if img.dim() == 4 else y.squeeze(0)

    def __repr__(self):
        return f"{self.__class__.__name__}(size={self.size}, interpolation={self.interpolation})"


class Lambda:
    """Applies a user function as a transform."""

    def __init__(self, lambd):
        if not callable(lambd):
            raise TypeError(f"Argument lambd should be callable, got {repr(type(lambd).__name__)}")
        self.lambd = lambd

    def __call__(self, img):
        return self.lambd(img)

    def __repr__(self):
        return f"{self.__class__.__name__}()"
