"""``argnums`` handling shared by grad, jacrev, jacfwd and hessian: validation with torch.func's errors, picking
the differentiated arguments out of ``args`` and putting their differentiable copies back."""
from ..utils._pytree import tree_flatten, tree_unflatten


def _wrap_argnum(argnum, num_args):
    if not isinstance(argnum, int):
        raise RuntimeError(f"argnum must be int, got: {type(argnum)}")
    if 0 <= argnum < num_args:
        return argnum
    if -num_args <= argnum < 0:
        return argnum + num_args
    raise RuntimeError(f"Got argnum={argnum}, but only {num_args} positional inputs")


def normalize_argnums(argnums, num_args):
    """``argnums`` with negative positions resolved; RuntimeError for a bad type, range, duplicate or empty
    tuple."""
    if isinstance(argnums, int):
        return _wrap_argnum(argnums, num_args)
    if not isinstance(argnums, tuple):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    wrapped = tuple(_wrap_argnum(a, num_args) for a in argnums)
    if not wrapped:
        raise RuntimeError("argnums must be non-empty")
    if len(set(wrapped)) != len(wrapped):
        raise RuntimeError(f"argnums elements must be unique, got {wrapped}")
    return wrapped


def differentiable_args(level, args, argnums):
    """(args with differentiable copies of the tensors at ``argnums``, the flat copies, the TreeSpec of the
    differentiated part). ``argnums=None`` differentiates every argument (vjp, jvp); an int selects one argument
    (any pytree of tensors), a tuple several (their pytree is that tuple)."""
    if argnums is None:
        flat, spec = tree_flatten(tuple(args))
        flat_x = [level.make_differentiable(t) for t in flat]
        return tuple(tree_unflatten(flat_x, spec)), flat_x, spec
    argnums = normalize_argnums(argnums, len(args))
    chosen = args[argnums] if isinstance(argnums, int) else tuple(args[i] for i in argnums)
    flat, spec = tree_flatten(chosen)
    flat_x = [level.make_differentiable(t) for t in flat]
    copies = tree_unflatten(flat_x, spec)
    new_args = list(args)
    if isinstance(argnums, int):
        new_args[argnums] = copies
    else:
        for i, c in zip(argnums, copies):
            new_args[i] = c
    return tuple(new_args), flat_x, spec


def select_argnums(args, argnums):
    """The primals selected by ``argnums`` (before any copy), as ``differentiable_args`` groups them."""
    if argnums is None:
        return tuple(args)
    argnums = normalize_argnums(argnums, len(args))
    return args[argnums] if isinstance(argnums, int) else tuple(args[i] for i in argnums)
