"""The Optimizer base class, with PyTorch's semantics: param_groups, per-parameter state, zero_grad,
step hooks and state_dict()/load_state_dict() in PyTorch's format (state keyed by parameter index)."""
import functools
import warnings
from collections import OrderedDict, defaultdict
from copy import deepcopy
from itertools import chain

import oneflow as flow
from oneflow import _C
from oneflow.utils.hooks import RemovableHandle

__all__ = ["Optimizer", "required"]


class _RequiredParameter:
    """Singleton class representing a required parameter for an Optimizer."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


def _typename(obj):
    if isinstance(obj, flow.Tensor):
        return flow.typename(obj)
    module = type(obj).__module__
    name = type(obj).__qualname__
    return name if module in (None, "builtins") else f"{module}.{name}"


def _scalar_dtype():
    return flow.float64 if flow.get_default_dtype() == flow.float64 else flow.float32


def _to_scalar(x):
    """A 1-element hyperparameter tensor as a 0-dim tensor (PyTorch's ``_to_scalar``); anything else as is."""
    if isinstance(x, flow.Tensor) and x.dim() != 0:
        return x.squeeze()
    return x


def _check_lr(lr):
    """The check every optimizer makes of a tensor learning rate before comparing it with 0."""
    if isinstance(lr, flow.Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")


def _check_fused(fused, foreach, differentiable):
    """PyTorch's construction-time errors for ``fused=True`` (SGD, Adam, AdamW, Adagrad). Every flow update is a
    fused op, so the flag changes nothing else."""
    if fused:
        if differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")


# The devices on which ``capturable=True`` is allowed (PyTorch asserts this at step time; flow has no CUDA-graph
# capture, but a CUDA build keeps the flag usable there as PyTorch does).
_CAPTURABLE_DEVICES = ["cuda"]


_global_step_pre_hooks = OrderedDict()
_global_step_post_hooks = OrderedDict()


def register_optimizer_step_pre_hook(hook):
    """Register a pre hook common to all optimizers: ``hook(optimizer, args, kwargs) -> None or (args, kwargs)``."""
    handle = RemovableHandle(_global_step_pre_hooks)
    _global_step_pre_hooks[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook):
    """Register a post hook common to all optimizers: ``hook(optimizer, args, kwargs) -> None``."""
    handle = RemovableHandle(_global_step_post_hooks)
    _global_step_post_hooks[handle.id] = hook
    return handle


def _with_hooks(step):
    """``step`` running the step pre/post hooks around it. As in PyTorch the hooks see ``args`` with the optimizer
    as its first element, and a pre hook's ``(new_args, new_kwargs)`` (self included) is what ``step`` gets."""

    @functools.wraps(step)
    def wrapper(*args, **kwargs):
        self = args[0]
        for hook in chain(_global_step_pre_hooks.values(), self._optimizer_step_pre_hooks.values()):
            result = hook(self, args, kwargs)
            if result is not None:
                if isinstance(result, tuple) and len(result) == 2:
                    args, kwargs = result
                else:
                    raise RuntimeError(
                        f"{step} must return None or a tuple of (new_args, new_kwargs), but got {result}."
                    )
        out = step(*args, **kwargs)
        self._step_sparse()
        for hook in chain(self._optimizer_step_post_hooks.values(), _global_step_post_hooks.values()):
            hook(self, args, kwargs)
        return out

    wrapper._hooked = True
    wrapper.hooked = True  # the attribute PyTorch's patched steps carry
    return wrapper


class Optimizer:
    """Base class for all optimizers.

    Args:
        params (iterable): an iterable of Tensors or dicts (parameter groups), or of (name, Tensor) pairs.
        defaults (dict): default values of the optimization options, used by groups that do not set them.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_hooked", False):
            cls.step = _with_hooks(step)

    # PyTorch's decorator for a ``step`` that should run the step hooks (every subclass's own ``step`` is
    # wrapped already when the class is defined)
    profile_hook_step = staticmethod(_with_hooks)

    # What the capturable check names (PyTorch's message differs between optimizers).
    _capturable_what = "params and state_steps"

    def __init__(self, params, defaults):
        self.defaults = defaults
        self._optimizer_step_pre_hooks = OrderedDict()
        self._optimizer_step_post_hooks = OrderedDict()
        self._optimizer_state_dict_pre_hooks = OrderedDict()
        self._optimizer_state_dict_post_hooks = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks = OrderedDict()
        self._optimizer_load_state_dict_post_hooks = OrderedDict()
        # the profiler label PyTorch keeps on every optimizer (part of its __dict__)
        self._zero_grad_profile_name = f"Optimizer.zero_grad#{self.__class__.__name__}.zero_grad"
        if isinstance(params, flow.Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or dicts, but got "
                + _typename(params)
            )
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    # Group options that pickles from older versions may lack, filled in on unpickling (PyTorch's defaults).
    _load_defaults = {}

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks",
                     "_optimizer_state_dict_pre_hooks", "_optimizer_state_dict_post_hooks",
                     "_optimizer_load_state_dict_pre_hooks", "_optimizer_load_state_dict_post_hooks"):
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())
        self._zero_grad_profile_name = f"Optimizer.zero_grad#{self.__class__.__name__}.zero_grad"
        self.defaults.setdefault("differentiable", False)
        # old pickles may hold plain-number step counters; the update ops want 0-dim tensors
        for group in self.param_groups:
            for k, v in self._load_defaults.items():
                group.setdefault(k, v)
            for p in group["params"]:
                self._ensure_step_tensor(self.state.get(p, {}), bool(group.get("fused") or group.get("capturable")))

    def __repr__(self):
        s = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += "\n"
            s += f"Parameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    s += f"    {key}: {group[key]}\n"
        s += ")"
        return s

    # ---- groups ---------------------------------------------------------------------------------------
    def add_param_group(self, param_group):
        """Add a param group to the Optimizer's ``param_groups`` (e.g. layers unfrozen during training)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, flow.Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the ordering of tensors "
                "in sets will change between runs. Please use a list instead."
            )
        else:
            param_group["params"] = list(params)

        extracted, names = [], []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                names.append(param[0])
                extracted.append(param[1])
            else:
                extracted.append(param)
        if names:
            if len(names) != len(extracted):
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
            param_group["param_names"] = names
        param_group["params"] = extracted

        for param in param_group["params"]:
            if not isinstance(param, flow.Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " + _typename(param))
            if not self.defaults.get("differentiable", None) and not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")

        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)

        params = param_group["params"]
        if len(params) != len({id(p) for p in params}):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; in future, this will cause an "
                "error; see github.com/pytorch/pytorch/issues/40967 for more information",
                stacklevel=3,
            )
        seen = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                current = "with names" if "param_names" in param_group else "without names"
                raise ValueError(
                    "all optimizer param groups should be with/without names. "
                    f"cannot add param group {current} to the optimizer"
                )
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # ---- gradients ------------------------------------------------------------------------------------
    def zero_grad(self, set_to_none=True):
        """Reset the gradients of all optimized tensors (to None by default, else to zero in place)."""
        for group in self.param_groups:
            for p in group["params"]:
                sparse_zero_grad = getattr(p, "_sparse_zero_grad", None)
                if sparse_zero_grad is not None:
                    sparse_zero_grad()
                g = p.grad
                if g is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if g.grad_fn is not None:
                        g.detach_()
                    else:
                        g.requires_grad_(False)
                    g.zero_()

    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        raise NotImplementedError

    # ---- hooks ----------------------------------------------------------------------------------------
    def _add_hook(self, hooks, hook, prepend=False):
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def register_step_pre_hook(self, hook):
        """``hook(optimizer, args, kwargs) -> None or (args, kwargs)`` runs before each ``step``."""
        return self._add_hook(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook):
        """``hook(optimizer, args, kwargs) -> None`` runs after each ``step``."""
        return self._add_hook(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook, prepend=False):
        return self._add_hook(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend=False):
        return self._add_hook(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        return self._add_hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        return self._add_hook(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # ---- state dict -----------------------------------------------------------------------------------
    def state_dict(self):
        """The optimizer's state as a dict: ``state`` (per-parameter state keyed by the parameter's index
        across all groups) and ``param_groups`` (each group's options, with ``params`` as index lists)."""
        for hook in self._optimizer_state_dict_pre_hooks.values():
            hook(self)
        mapping = {}
        start = 0

        def pack_group(group):
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            mapping.update({id(p): i for i, p in enumerate(group["params"], start) if id(p) not in mapping})
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {
            (mapping[id(k)] if isinstance(k, flow.Tensor) else k): v for k, v in self.state.items()
        }
        state_dict = {"state": packed_state, "param_groups": param_groups}
        for hook in self._optimizer_state_dict_post_hooks.values():
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    @staticmethod
    def _cast_state_value(param, value, key, group=None):
        # floating state follows the parameter's dtype; the step counter is kept as saved, except in a group
        # saved with fused or capturable set, where PyTorch keeps it in float32 on the parameter's device
        if key == "step":
            if group is not None and (group.get("fused") or group.get("capturable")):
                return value.to(dtype=flow.float32, device=param.device)
            return value
        if param.is_floating_point():
            return value.to(dtype=param.dtype, device=param.device)
        return value.to(device=param.device)

    def load_state_dict(self, state_dict):
        """Load an optimizer state (as returned by :meth:`state_dict`, also PyTorch's format)."""
        state_dict = state_dict.copy()
        for hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError(
                "loaded state dict contains a parameter group that doesn't match the size of optimizer's group"
            )
        id_map = dict(
            zip(
                chain.from_iterable(g["params"] for g in saved_groups),
                chain.from_iterable(g["params"] for g in groups),
            )
        )

        def cast(param, value, group, key=None):
            if isinstance(value, flow.Tensor):
                return Optimizer._cast_state_value(param, value, key, group)
            if isinstance(value, dict):
                return {k: cast(param, v, group, key=k) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return type(value)(cast(param, v, group) for v in value)
            return value

        def saved_group_of(param_id):
            # the group (as saved) holding param_id: its fused/capturable flags decide how "step" is cast
            return next((g for g in state_dict["param_groups"] if param_id in g["params"]), None)

        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = cast(param, v, saved_group_of(k))
            else:
                state[k] = v

        def update_group(group, new_group):
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]
        self.__setstate__({"state": state, "param_groups": param_groups})
        for hook in self._optimizer_load_state_dict_post_hooks.values():
            hook(self)

    # ---- sparse parameters ----------------------------------------------------------------------------
    # A parameter that stands for rows kept outside it (flow-embedding's tables) carries ``_sparse_update``:
    # ``p._sparse_update(optimizer, group)`` applies this optimizer's update, with the group's options, to the rows
    # its last backward passes touched (and raises TypeError for an optimizer it has no sparse rule for). Dense
    # updates skip such parameters; ``zero_grad`` calls their ``_sparse_zero_grad()`` when they have one.
    @flow.no_grad()
    def _step_sparse(self):
        seen = set()
        for group in self.param_groups:
            for p in group["params"]:
                update = getattr(p, "_sparse_update", None)
                if update is not None and id(p) not in seen:
                    seen.add(id(p))
                    update(self, group)

    # ---- helpers for subclasses -----------------------------------------------------------------------
    def _grads_of(self, group):
        """(param, grad) for the group's parameters that have a gradient, each parameter once, after the checks
        PyTorch makes at step time of the ``capturable`` and ``differentiable`` flags."""
        out, seen = [], set()
        for p in group["params"]:
            g = p.grad
            if g is None or id(p) in seen or hasattr(p, "_sparse_update"):
                continue
            seen.add(id(p))
            out.append((p, g))
        if group.get("capturable") and any(p.device.type not in _CAPTURABLE_DEVICES for p, _ in out):
            raise AssertionError(f"If capturable=True, {self._capturable_what} must be on supported devices: "
                                 f"{_CAPTURABLE_DEVICES}.")
        if group.get("differentiable"):
            self._check_differentiable(out)
        return out

    @staticmethod
    def _check_differentiable(params_and_grads):
        # PyTorch runs a differentiable step with grad mode on: updating a leaf that requires grad in place is
        # then an autograd error. A step that autograd would have to record (a non-leaf parameter, a gradient
        # with a graph) cannot be done by flow's update ops, which are not differentiable.
        for p, g in params_and_grads:
            if p.requires_grad and p.is_leaf:
                raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
            if p.requires_grad or g.requires_grad:
                raise NotImplementedError(
                    "differentiable=True: oneflow's fused optimizer update ops are not differentiable, so a step "
                    "cannot be recorded by autograd"
                )

    def _state_created(self, p, state):
        """Called once per parameter, right after its state was created and before the next parameter's is. A
        wrapper that lays state out differently sets ``_state_init_hook(param, state)`` on the optimizer:
        ZeRO shards each parameter's state here, so the whole state of all parameters never exists at once."""
        hook = self.__dict__.get("_state_init_hook")
        if hook is not None:
            hook(p, state)

    def _pack_state(self, group, keys, init):
        """The tensor lists of a fused update op: the parameters that have a grad, their grads, then one list per
        state key in ``keys`` (None: a list the op's options leave unused, passed empty). ``init(param, grad)``
        gives the state (a dict, in PyTorch's key order) of a parameter seen for the first time."""
        params, grads = [], []
        for p, g in self._grads_of(group):
            state = self.state[p]
            if len(state) == 0:
                state.update(init(p, g))
                self._state_created(p, state)
            params.append(p)
            grads.append(g)
        return [params, grads, *([] if k is None else [self.state[p][k] for p in params] for k in keys)]

    def _lr_tensor(self, index, group):
        """Group ``index``'s learning rate as the 0-dim tensor the update ops read. A float lr lives in one tensor
        per group, refilled only when ``group["lr"]`` changed (a scheduler), so a traced graph that holds the
        tensor sees the new value without a new op or attribute; a tensor lr (as PyTorch allows) is used as is."""
        lr = group["lr"]
        if isinstance(lr, flow.Tensor):
            lr = _to_scalar(lr)
            return lr if lr.is_floating_point() else lr.to(flow.float64)
        # not in __getstate__: pickles and copies make their own
        cache = self.__dict__.setdefault("_lr_tensors", [])
        while len(cache) <= index:
            cache.append(None)
        entry = cache[index]
        if entry is None:
            # float64 holds a Python float exactly, as the float attribute did
            entry = cache[index] = [flow.full((), float(lr), dtype=flow.float64), lr]
        elif entry[1] != lr:
            entry[0].fill_(float(lr))
            entry[1] = lr
        return entry[0]

    def _step_groups(self, closure, op_name, pack, attrs, takes_lr=True):
        """The step of a fused optimizer: per group, ``op_name`` on ``pack(group)`` (its tensor lists) with the
        options ``attrs(group)`` and, where the op takes one, the group's lr tensor. Returns the closure's loss."""
        loss = self._closure_loss(closure)
        for i, group in enumerate(self.param_groups):
            lr = dict(lr=self._lr_tensor(i, group)) if takes_lr else {}
            self._run(op_name, pack(group), **lr, **attrs(group))
        return loss

    # One-element state entries besides "step" that old pickles may hold as plain numbers (ASGD, NAdam).
    _scalar_state_keys = ()

    def _ensure_step_tensor(self, state, float32=False):
        # plain-number counters become 0-dim tensors, in float32 for fused/capturable groups as in PyTorch
        for key in ("step",) + self._scalar_state_keys:
            value = state.get(key)
            if value is not None and not isinstance(value, flow.Tensor):
                dtype = flow.float32 if float32 and key == "step" else _scalar_dtype()
                state[key] = flow.tensor(float(value), dtype=dtype)

    @staticmethod
    def _new_step(fused=False):
        # a fused group counts its steps in float32 whatever the default dtype (PyTorch's scalar dtype rule)
        return flow.zeros((), dtype=flow.float32 if fused else _scalar_dtype())

    @staticmethod
    def _run(op_name, lists, **attrs):
        """``op_name`` on a group's tensor lists (``lists[0]``: the parameters with a grad, none: nothing to do)."""
        if lists[0]:
            getattr(_C.ops, op_name)(*lists, **attrs)

    @staticmethod
    def _closure_loss(closure):
        if closure is None:
            return None
        with flow.enable_grad():
            return closure()
