"""Shape and view methods with PyTorch's varargs signatures (``x.view(2, 3)``, ``x.permute(1, 0)``)."""
import operator

from .. import _C

ops = _C.ops

__all__ = ["reshape", "flatten", "unflatten", "narrow", "split", "chunk", "unbind", "squeeze", "t",
           "movedim", "swapaxes", "swapdims", "transpose", "ravel", "tensor_split", "moveaxis", "narrow_copy",
           "hsplit", "vsplit", "dsplit", "as_strided"]


def _shape_args(args, name):
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return list(args[0])
    if len(args) == 1 and hasattr(args[0], "__len__") and not isinstance(args[0], _C.TensorBase):
        return list(args[0])
    return list(args)


def view(self, *shape):
    """Returns a tensor with the same data and a new shape (no copy); see ``Tensor.reshape``.

    ``view(dtype)`` reads the same bytes as ``dtype``; a dtype of another element size scales the last
    dimension, which must then have stride 1 (PyTorch's rules). The result does not require grad.
    """
    if len(shape) == 1 and isinstance(shape[0], _C.dtype):
        return ops.view_dtype(self, shape[0])
    return ops.view(self, _shape_args(shape, "view"))


def reshape(input, *shape):
    """Returns a tensor with ``input``'s data in ``shape``: a view when strides allow, else a copy."""
    return ops.reshape(input, _shape_args(shape, "reshape"))


def expand(self, *sizes):
    """expand(*sizes) -> Tensor

    A view of ``self`` with its size-1 dimensions repeated to ``sizes`` (given separately or as one sequence;
    -1 keeps a dimension, new leading dimensions may be added), without copying."""
    return ops.expand(self, _shape_args(sizes, "expand"))


def permute(self, *dims):
    """permute(*dims) -> Tensor

    A view of ``self`` with its dimensions reordered as ``dims`` (given separately or as one sequence)."""
    return ops.permute(self, _shape_args(dims, "permute"))


def transpose(input, dim0, dim1):
    """transpose(input, dim0, dim1) -> Tensor

    A view of ``input`` with dimensions ``dim0`` and ``dim1`` swapped. Also available as ``swapaxes`` and
    ``swapdims`` (functions and Tensor methods)."""
    return ops.transpose(input, dim0, dim1)


def t(input):
    r"""Transposes a tensor of at most 2 dims.

    A 0-D or 1-D ``input`` comes back unchanged in shape, but (as in PyTorch) as a new view of it, so that
    in-place writes to the result are in-place writes to a view of ``input``.
    """
    if input.dim() > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.dim()}D")
    return ops.view(input, list(input.shape)) if input.dim() < 2 else ops.transpose(input, 0, 1)


def _check_unique_dims(dims, ndim):
    """PyTorch refuses a dim named twice (after wrapping negatives); out-of-range dims are left to the op."""
    seen = set()
    n = max(ndim, 1)
    for d in dims:
        d = operator.index(d)
        w = d + n if -n <= d < 0 else d
        if w in seen:
            raise RuntimeError(f"dim {w} appears multiple times in the list of dims")
        seen.add(w)


def squeeze(input, dim=None):
    r"""Removes dims of size 1: all of them, or those of ``dim`` (an int or a tuple of ints) that have size 1.

    The result is a view of ``input``.
    """
    if dim is None:
        return ops.squeeze(input)
    if isinstance(dim, (tuple, list)):
        _check_unique_dims(dim, input.dim())
        return ops.squeeze(input, list(dim))
    return ops.squeeze_dim(input, dim)


def flatten(input, start_dim=0, end_dim=-1):
    """Flattens dims ``start_dim``..``end_dim`` into one."""
    nd = input.dim()
    if nd == 0:
        # a scalar's dims wrap as a 1-D tensor's do: only -1 and 0 are valid
        for d in (start_dim, end_dim):
            if d not in (-1, 0):
                raise IndexError(f"Dimension out of range (expected to be in range of [-1, 0], but got {d})")
        return ops.reshape(input, [1])
    s = start_dim + nd if start_dim < 0 else start_dim
    e = end_dim + nd if end_dim < 0 else end_dim
    if not (0 <= s < nd and 0 <= e < nd):
        raise IndexError(f"flatten: Dimension out of range (expected to be in range of [{-nd}, {nd - 1}])")
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return input
    shape = list(input.shape)
    n = 1
    for d in shape[s:e + 1]:
        n *= d
    return ops.reshape(input, shape[:s] + [n] + shape[e + 1:])


def unflatten(input, dim, sizes):
    """Expands dim ``dim`` into ``sizes`` (one of which may be -1, inferred from that dim's size alone)."""
    size = _dim_size(input, dim)
    nd = input.dim()
    d = dim + nd if dim < 0 else dim
    sizes = [operator.index(s) for s in sizes]
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    # the -1 is resolved here against the one dim, as PyTorch does: reshape would infer it from the whole
    # tensor, which is ambiguous when another dim is 0
    infer, known = None, 1
    for i, s in enumerate(sizes):
        if s == -1:
            if infer is not None:
                raise RuntimeError("unflatten got an unexpected error:\nonly one dimension can be inferred")
            infer = i
        elif s >= 0:
            known *= s
        else:
            raise RuntimeError(f"unflatten got an unexpected error:\ninvalid shape dimension {s} at index {i} "
                               f"of shape {sizes}")
    if infer is not None and (size == known or (known > 0 and size % known == 0)):
        if known == 0:
            raise RuntimeError(f"unflatten got an unexpected error:\ncannot reshape tensor of 0 elements into "
                               f"shape {sizes} because the unspecified dimension size -1 can be any value and is "
                               "ambiguous")
        sizes[infer] = size // known
    elif size != known or infer is not None:
        raise RuntimeError(f"unflatten: Provided sizes {sizes} don't multiply up to the size of dim {d} ({size}) "
                           "in the input tensor")
    shape = list(input.shape)
    return ops.reshape(input, shape[:d] + sizes + shape[d + 1:])


def narrow(input, dim, start, length):
    """A view of ``length`` elements of ``dim`` from ``start``."""
    if input.dim() == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    size = _dim_size(input, dim)
    if isinstance(start, _C.TensorBase):
        start = int(start.item())
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but got {start})")
    if start < 0:
        start += size
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return ops.slice(input, dim, start, start + length, 1)


def _dim_size(t, dim):
    """Size of ``dim`` (negative counts from the end), with PyTorch's IndexError when out of range."""
    nd = t.dim()
    if not -nd <= dim < nd:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {dim})")
    return t.shape[dim]


def split(tensor, split_size_or_sections, dim=0):
    """Splits into chunks of ``split_size_or_sections`` (an int or a list of sizes) along ``dim``: views of
    ``tensor`` from one ``split_with_sizes`` op, whose backward writes all the pieces' gradients at once."""
    if not isinstance(split_size_or_sections, (list, tuple)) and hasattr(split_size_or_sections, "__index__"):
        if tensor.dim() == 0:
            raise RuntimeError("split expects at least a 1-dimensional tensor")
        size = _dim_size(tensor, dim)
        step = split_size_or_sections.__index__()
        if step < 0:
            raise RuntimeError(f"split expects split_size be non-negative, but got split_size={step}")
        if step == 0 and size > 0:
            raise RuntimeError(
                f"split_size can only be 0 if dimension size is 0, but got dimension size of {size}")
        # PyTorch's rule: max(ceil(size / step), 1) pieces, the last one holding the remainder
        n = max(-(-size // step), 1) if step > 0 else 1
        sections = [step] * (n - 1) + [size - step * (n - 1)]
        return ops.split_with_sizes(tensor, sections, dim)
    return ops.split_with_sizes(tensor, [int(s) for s in split_size_or_sections], dim)


def _split_method(self, split_size, dim=0):
    """``Tensor.split``: PyTorch names the size argument ``split_size`` here (``split_size_or_sections`` in
    ``torch.split``)."""
    return split(self, split_size, dim)


def chunk(input, chunks, dim=0):
    """chunk(input, chunks, dim=0) -> tuple of Tensors

    Splits ``input`` along ``dim`` into at most ``chunks`` views of equal size (the last may be smaller)."""
    if input.dim() == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    size = _dim_size(input, dim)
    step = -(-size // chunks)
    if step == 0:
        # an empty dim gives `chunks` empty pieces (PyTorch's rule)
        return ops.split_with_sizes(input, [0] * chunks, dim)
    return split(input, step, dim)


def unbind(input, dim=0):
    """unbind(input, dim=0) -> tuple of Tensors

    The slices of ``input`` along ``dim``, with that dimension removed, as views."""
    return ops.unbind(input, dim)


def movedim(input, source, destination):
    """``input`` with the dims at ``source`` moved to ``destination`` (the others keep their order)."""
    nd = input.dim()
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src} dims) should contain the "
                           f"same number of dims as destination ({dst} dims)")
    lim = max(nd, 1)  # a 0-dim tensor takes dim 0 / -1, as in torch
    for d in src + dst:
        if not -lim <= d < lim:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-lim}, {lim - 1}], but got {d})")
    for name, given in (("source", src), ("destination", dst)):
        if len({d % lim for d in given}) != len(given):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({given})")
    src = [s % lim for s in src]
    dst = [d % lim for d in dst]
    if nd == 0:
        return ops.view(input, [])
    perm = [-1] * nd
    for s, d in zip(src, dst):
        perm[d] = s
    rest = iter(i for i in range(nd) if i not in src)
    perm = [p if p != -1 else next(rest) for p in perm]
    return ops.permute(input, perm)


swapaxes = swapdims = transpose
moveaxis = movedim


def ravel(input):
    """The elements of ``input`` as a contiguous 1-D tensor (a view when ``input`` is contiguous)."""
    return ops.reshape(input, [-1])


def tensor_split(input, indices_or_sections, dim=0):
    """Splits ``input`` along ``dim`` into views: an int ``n`` gives ``n`` pieces, the first ``size % n`` one
    element longer; a list of indices gives the pieces between them (Python slice rules: negative indices count
    from the end, out-of-range ones clamp, so pieces may be empty)."""
    if input.dim() == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    size = _dim_size(input, dim)
    ios = indices_or_sections
    if isinstance(ios, _C.TensorBase):
        if ios.dtype.is_floating_point or ios.dim() > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                               "one-dimensional tensor of integer dtype")
        ios = int(ios.item()) if ios.dim() == 0 else [int(i) for i in ios.tolist()]
    if not isinstance(ios, (list, tuple)):
        n = ios.__index__()
        if n <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {n}")
        q, r = divmod(size, n)
        bounds, start = [], 0
        for i in range(n):
            bounds.append((start, start + q + (1 if i < r else 0)))
            start = bounds[-1][1]
    else:
        cuts = [0] + [int(i) for i in ios] + [size]
        norm = [min(max(c + size if c < 0 else c, 0), size) for c in cuts]
        bounds = [(norm[i], max(norm[i], norm[i + 1])) for i in range(len(norm) - 1)]
        bounds[-1] = (bounds[-1][0], max(bounds[-1][0], size))
    return tuple(ops.slice(input, dim, s, e, 1) for s, e in bounds)


def narrow_copy(input, dim, start, length):
    """A contiguous copy of ``narrow(input, dim, start, length)``."""
    return ops.clone(narrow(input, dim, start, length))


def unfold(self, dimension, size, step):
    """``Tensor.unfold``: a view with every slice of ``size`` elements along ``dimension``, ``step`` apart,
    as a new last dimension (``dimension`` shrinks to the number of slices)."""
    if self.dim() == 0:
        if size > 1:
            raise RuntimeError(f"maximum size for tensor at dimension 0 is 1 but size is {size}")
        if step <= 0:
            raise RuntimeError(f"step is {step} but must be > 0")
        return ops.reshape(self, [1])
    n = _dim_size(self, dimension)
    d = dimension % self.dim()
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    shape, strides = list(self.shape), list(self.stride())
    count = (n - size) // step + 1
    shape[d] = count
    strides[d] = strides[d] * step
    size_, stride_ = shape + [size], strides + [self.stride(d)]
    if not _grad_recorded(self):  # any layout: a plain view of the storage
        return ops.as_strided(self, size_, stride_, self.storage_offset())
    view = _differentiable_view(self, size_, stride_, self.storage_offset())
    if view is not None:
        return view
    if size == 0:  # no windows to stack: an empty slice of ``self`` reshaped (keeps the autograd link)
        return ops.reshape(ops.slice(self, d, 0, 0, 1), shape + [0])
    if size <= step and count * step <= n:
        return _disjoint_windows(self, d, size, step, count)
    # as_strided differentiates only a contiguous input: other layouts get a copy built from strided slices
    windows = [ops.slice(self, d, j, j + step * (count - 1) + 1, step) for j in range(size)]
    return ops.cat([ops.unsqueeze(w, -1) for w in windows], -1)


def _disjoint_windows(t, d, size, step, count):
    """``unfold`` of windows that neither overlap nor run past the end, built from plain views (narrow, split
    the dim in two, keep ``size`` of each ``step``, move it last): a view for any layout of ``t``."""
    v = ops.slice(t, d, 0, count * step, 1)
    v = ops.view(v, list(t.shape[:d]) + [count, step] + list(t.shape[d + 1:]))
    v = ops.slice(v, d + 1, 0, size, 1)
    return movedim(v, d + 1, -1)


def _grad_recorded(t):
    return t.requires_grad and _C.is_grad_enabled()


def _overlaps_itself(size, stride):
    """Whether two elements of a view with this geometry may share a location (a conservative test: each dim
    of size > 1, by increasing stride, must step past the whole extent of the dims before it)."""
    extent = 0
    for n, st in sorted(((n, st) for n, st in zip(size, stride) if n > 1), key=lambda p: p[1]):
        if st <= extent:
            return True
        extent += (n - 1) * st
    return False


def _region_inside(size, stride, rel, numel):
    if 0 in size:
        return 0 <= rel <= numel
    return rel >= 0 and rel + sum((n - 1) * st for n, st in zip(size, stride)) < numel


def _differentiable_view(input, size, stride, offset):
    """A differentiable view of ``input``'s storage with this geometry, or None where ``input`` is not dense.

    ``as_strided`` saves ``input`` for its backward (so writing into ``input`` or the view afterwards makes
    backward fail, where PyTorch keeps only the geometry), and it differentiates only a contiguous input. So
    ``input`` is seen in its dense dim order, and a region of distinct elements inside it uses ``strided_view``,
    whose backward needs no saved tensor (but would not sum the gradients of elements seen twice); any other
    region keeps ``as_strided``.
    """
    if any(n < 0 for n in size) or any(st < 0 for st in stride):
        return None  # as_strided reports these
    perm = sorted(range(input.dim()), key=lambda i: -input.stride(i))
    dense = ops.permute(input, perm)
    if not dense.is_contiguous():
        return None
    rel = offset - input.storage_offset()
    if _overlaps_itself(size, stride) or not _region_inside(size, stride, rel, input.numel()):
        return ops.as_strided(dense, size, stride, offset)
    return ops.strided_view(dense, size, stride, rel)


def as_strided(input, size, stride, storage_offset=None):
    r"""A view of ``input``'s storage with the given ``size``, ``stride`` and ``storage_offset``.

    Args:
        size (tuple of ints): the shape of the view.
        stride (tuple of ints): the stride of each dim, in elements.
        storage_offset (int, optional): the offset of the first element in the storage. Default: ``input``'s.
    """
    size, stride = list(size), list(stride)
    if len(size) == len(stride) and _grad_recorded(input):
        offset = input.storage_offset() if storage_offset is None else operator.index(storage_offset)
        view = _differentiable_view(input, size, stride, offset)
        if view is not None:
            return view
    return ops.as_strided(input, size, stride, storage_offset)


def ndimension(self):
    """Alias of ``Tensor.dim()``."""
    return self.dim()


def view_as(self, other):
    """view_as(other) -> Tensor

    ``self.view(other.shape)``: a view with ``other``'s shape."""
    return ops.view(self, list(other.shape))


def reshape_as(self, other):
    """reshape_as(other) -> Tensor

    ``self.reshape(other.shape)``: a view when the strides allow, else a copy."""
    return ops.reshape(self, list(other.shape))


def expand_as(self, other):
    """expand_as(other) -> Tensor

    ``self.expand(other.shape)``: a view broadcast to ``other``'s shape."""
    return ops.expand(self, list(other.shape))


def resize_(self, *sizes, memory_format=None):
    """Resizes ``self`` in place to ``sizes`` (contiguous). Its storage grows when too small, keeping the
    existing values; new elements are uninitialised. As in PyTorch, tensors that require grad and memory the
    tensor does not own (``from_numpy``) cannot be resized."""
    return _C._resize_(self, [int(s) for s in _shape_args(sizes, "resize_")])


def resize_as_(self, other, memory_format=None):
    """Resizes ``self`` in place to ``other``'s size; see ``Tensor.resize_``."""
    return _C._resize_(self, list(other.shape))


def _dir_split(name, input, indices_or_sections, dim, min_dims):
    if input.dim() < min_dims:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dims} dimension, but got a tensor "
                           f"with {input.dim()} dimensions!")
    if isinstance(indices_or_sections, int):
        size = input.shape[dim]
        if indices_or_sections == 0 or size % indices_or_sections != 0:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the size of the "
                               f"dimension {size} is not divisible by the split_size {indices_or_sections}!")
    return tensor_split(input, indices_or_sections, dim)


def hsplit(input, indices_or_sections):
    """``tensor_split`` along dim 1 (dim 0 for 1-D tensors); an int must divide that dim."""
    return _dir_split("hsplit", input, indices_or_sections, 0 if input.dim() == 1 else 1, 1)


def vsplit(input, indices_or_sections):
    """``tensor_split`` along dim 0 of a tensor with at least 2 dims; an int must divide that dim."""
    return _dir_split("vsplit", input, indices_or_sections, 0, 2)


def dsplit(input, indices_or_sections):
    """``tensor_split`` along dim 2 of a tensor with at least 3 dims; an int must divide that dim."""
    return _dir_split("dsplit", input, indices_or_sections, 2, 3)


def _t_all(self):
    if self.dim() == 0:  # torch's deprecation: 0-dim tensors stay as they are
        import warnings

        warnings.warn("Tensor.T is deprecated on 0-D tensors. This function is the identity in these cases.")
        return ops.view(self, [])
    return ops.permute(self, list(range(self.dim() - 1, -1, -1)))


def _matrix_t(self, name):
    if self.dim() == 0:
        import warnings

        warnings.warn(f"Tensor.{name} is deprecated on 0-D tensors. This function is the identity in these cases.")
        return ops.view(self, [])
    if self.dim() < 2:
        raise RuntimeError(f"tensor.{name} is only supported on matrices or batches of matrices. Got "
                           f"{self.dim()}-D tensor.")
    return ops.transpose(self, -2, -1)


TENSOR_METHODS = {
    "resize_": resize_, "resize_as_": resize_as_,
    "view": view, "reshape": reshape, "expand": expand, "permute": permute, "transpose": transpose, "t": t,
    "squeeze": squeeze, "flatten": flatten, "unflatten": unflatten, "narrow": narrow, "split": _split_method,
    "chunk": chunk, "unbind": unbind, "movedim": movedim, "swapaxes": swapaxes, "swapdims": swapdims,
    "ravel": ravel, "tensor_split": tensor_split, "moveaxis": movedim, "narrow_copy": narrow_copy,
    "hsplit": hsplit, "vsplit": vsplit, "dsplit": dsplit,
    "unfold": unfold, "ndimension": ndimension, "as_strided": as_strided,
    "view_as": view_as, "reshape_as": reshape_as, "expand_as": expand_as,
    "T": property(lambda self: _t_all(self)),
    "mT": property(lambda self: _matrix_t(self, "mT")), "mH": property(lambda self: _matrix_t(self, "mH")),
}
