"""``nn.Graph``: OneFlow's static-graph API over the tracer, the passes and the plan executor."""
import inspect
import itertools
from collections import OrderedDict

import oneflow as flow
from oneflow._dispatch import current_modes
from oneflow.nn import Module
from oneflow.optim import Optimizer

from . import passes as _passes
from . import pipeline as _pipeline
from .config import GraphConfig
from .executor import Plan, flat_tensors
from .graph_repr import graph_repr
from .structure import describe, leaves, signature
from .graph_module import checkpoint_hooks
from .passes.checkpoint import activation_checkpointing
from .tracer import Proxy, TraceMode, is_traced, is_wrapper, trace

_instance_counts = itertools.count()


class _Compiled:
    """One compiled signature: the IR before and after the passes, their statistics and the plan."""

    def __init__(self, ir_before, ir, report, plan, one_shot, example):
        self.ir_before, self.ir, self.report, self.plan = ir_before, ir, report, plan
        self.one_shot = one_shot  # traced while optimizer state was being created: valid for this call only
        self.example = example  # (input descriptions, output structure) for repr
        self.scaler_new_state = None  # optimizer state a skipped first step must not leave behind (amp.py)


class Graph:
    """Base class of static graphs, OneFlow's ``oneflow.nn.Graph``.

    Subclass it, call ``super().__init__()`` first in ``__init__``, assign the modules (and add the optimizers)
    the graph uses, and define ``build(*args, **kwargs)`` returning tensors or nested tuples/lists/dicts of
    them. The first call with a given input signature (the structure, shapes, dtypes and devices of the
    arguments, and their non-tensor values) traces ``build``, optimises the traced IR and runs it; later calls
    with that signature run the compiled plan only. Parameters and buffers are shared with the eager modules.

    A training graph calls ``loss.backward()`` inside ``build`` and registers its optimizers with
    :meth:`add_optimizer`: each call then runs forward, backward, the optimizer steps and ``zero_grad`` as one
    plan, and afterwards steps the lr schedulers (a new learning rate reaches the plan without recompiling).

    Example::

        >>> class TrainGraph(flow.nn.Graph):
        ...     def __init__(self, model, optimizer):
        ...         super().__init__()
        ...         self.model = model
        ...         self.add_optimizer(optimizer)
        ...     def build(self, x, y):
        ...         loss = flow.nn.functional.mse_loss(self.model(x), y)
        ...         loss.backward()
        ...         return loss
    """

    _cache_size = None  # None: every signature stays compiled (see with_dynamic_input_shape)

    def __init__(self):
        d = self.__dict__
        d["_name"] = f"{type(self).__name__}_{next(_instance_counts)}"
        d["_modules"] = OrderedDict()
        d["_opts"] = []  # [optimizer, lr_scheduler or None]
        d["_cache"] = OrderedDict()
        d["config"] = GraphConfig()
        d["_debug_level"] = -1
        d["_last"] = None
        d["_compile_count"] = 0

    # ---- attributes ---------------------------------------------------------------------------------------
    def __setattr__(self, name, value):
        if "_modules" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__}: call super().__init__() in __init__ before assigning "
                                 f"attributes to an nn.Graph")
        if isinstance(value, Module):
            self._modules[name] = value
            self.__dict__.pop(name, None)
        elif isinstance(value, Optimizer):
            raise AttributeError(f"'{name}': an optimizer is added to an nn.Graph with "
                                 f"self.add_optimizer(optimizer, lr_sch=...), not assigned as an attribute")
        else:
            self._modules.pop(name, None)
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        modules = self.__dict__.get("_modules")
        if modules is not None and name in modules:
            return modules[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    @property
    def name(self):
        """The graph's unique name: its class name and an instance number (``MyGraph_0``)."""
        return self._name

    @property
    def training(self):
        """Whether the graph trains: True once an optimizer has been added."""
        return self.config.training

    @property
    def is_compiled(self):
        """Whether a call has compiled the graph (for at least one input signature)."""
        return bool(self._cache) or self._last is not None

    def build(self, *args, **kwargs):
        """The computation of the graph, written with eager code: override it in the subclass."""
        raise NotImplementedError(f"{type(self).__name__} must override build()")

    def add_optimizer(self, optim, *, lr_sch=None, is_sparse=False):
        """Makes the graph a training graph that steps ``optim`` (and then ``lr_sch``, an lr scheduler of
        ``optim``) on each call, after the ``loss.backward()`` of ``build``; gradients are zeroed after the step.
        A parameter group with ``clip_grad_max_norm`` (and optionally ``clip_grad_norm_type``, default 2) has
        its gradients clipped to that total norm before the step, as in OneFlow.

        Args:
            optim (oneflow.optim.Optimizer): the optimizer.
            lr_sch (oneflow.optim.lr_scheduler.LRScheduler, optional): its learning-rate scheduler.
            is_sparse (bool): OneFlow's sparse-update flag: ``optim`` holds embedding parameters (flow-embedding's
                ``OneEmbedding`` tables) that update only the rows looked up in the step, inside the compiled
                step. Checked here: ``optim`` must hold such a parameter and have a sparse rule for it
                (``ValueError`` / ``TypeError`` otherwise).
        """
        if not isinstance(optim, Optimizer):
            raise TypeError(f"add_optimizer() expects an oneflow.optim.Optimizer, but got {type(optim).__name__}")
        if lr_sch is not None and getattr(lr_sch, "optimizer", None) is not optim:
            raise ValueError("add_optimizer(): lr_sch must be a scheduler of the optimizer it is added with")
        if is_sparse:
            _check_sparse(optim)
        if any(o is optim for o, _ in self._opts):
            raise ValueError("add_optimizer(): this optimizer was added already")
        if self.is_compiled:
            raise RuntimeError(f"{self.name}: add_optimizer() must be called before the graph is first called")
        self._opts.append([optim, lr_sch])
        self.config._train(True)

    def set_grad_scaler(self, grad_scaler=None):
        """Scales the loss of the training graph with ``grad_scaler`` (an ``oneflow.amp.GradScaler``), as eager
        ``scaler.scale(loss).backward()``, ``scaler.unscale_(opt)``, ``scaler.step(opt)`` and ``scaler.update()``
        do, all inside the graph: gradients are unscaled before clipping, an optimizer step whose gradients
        hold an inf or NaN leaves the parameters and optimizer state as they were, and the scale (read with
        ``grad_scaler.get_scale()``) backs off or grows after each call. Call it before the first call."""
        from .amp import check_scaler, prepare_scaler

        if self.is_compiled:
            raise RuntimeError(f"{self.name}: set_grad_scaler() must be called before the graph is first called")
        if grad_scaler is not None and check_scaler(grad_scaler).is_enabled():
            prepare_scaler(grad_scaler)  # its tensors exist from now on: state_dict and load see them
        self.__dict__["_grad_scaler"] = grad_scaler

    @classmethod
    def with_dynamic_input_shape(cls, size=10, *args, **kwargs):
        """A class decorator bounding the number of input signatures a graph keeps compiled (least recently
        used first out): ``@flow.nn.Graph.with_dynamic_input_shape(size=4)``."""
        if size < 1:
            raise ValueError(f"with_dynamic_input_shape(size={size}): size must be at least 1")

        def decorate(graph_cls):
            graph_cls._cache_size = size
            return graph_cls

        return decorate

    # ---- calling ------------------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if "_modules" not in self.__dict__:
            raise RuntimeError(f"{type(self).__name__}.__init__ did not call super().__init__()")
        if any(isinstance(m, TraceMode) for m in current_modes()):
            # called inside another graph's build: its ops become part of that graph
            return self.build(*args, **kwargs)
        key = signature((args, kwargs))
        entry = self._cache.get(key)
        if entry is None:
            self._check_arguments(args, kwargs)
            entry = self._compile(args, kwargs)
            if not entry.one_shot:
                self._remember(key, entry)
        else:
            self._cache.move_to_end(key)
        self.__dict__["_last"] = entry
        for opt, _ in self._opts:  # a scheduler's new lr goes into the tensor the plan reads
            for i, group in enumerate(opt.param_groups):
                opt._lr_tensor(i, group)
        out = entry.plan.run(flat_tensors(args, kwargs))
        if entry.scaler_new_state and bool(self.__dict__.pop("_found_inf")):
            from .amp import drop_new_state

            drop_new_state(self, entry.scaler_new_state)
        for _, sch in self._opts:
            if sch is not None:
                sch.step()
        return out

    def _remember(self, key, entry):
        """Caches a compiled signature as the most recent one, dropping the least recently used past the bound
        of with_dynamic_input_shape."""
        self._cache[key] = entry
        self._cache.move_to_end(key)
        if self._cache_size is not None:
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)

    def _prologue_caches(self):
        """The prologue caches of this graph's plans, shared by the signatures that hoist the same work (see
        prologue.py), so that each cached result is held once per graph, not once per input shape."""
        caches = self.__dict__.get("_prologues")
        if caches is None:
            from .prologue import new_registry

            caches = self.__dict__["_prologues"] = new_registry()
        return caches

    def _check_arguments(self, args, kwargs):
        try:
            sig = inspect.signature(self.build)
        except (TypeError, ValueError):
            return
        try:
            sig.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.name}: the call does not match {type(self).__name__}.build{sig}: {e} "
                            f"(got {describe(tuple(args))}{', ' + describe(kwargs) if kwargs else ''})") from None
        for x in leaves((tuple(args), dict(kwargs))):
            if isinstance(x, Proxy):
                raise TypeError(f"{self.name}: a tensor traced inside another graph's build() was passed to it")
            if isinstance(x, flow.Tensor) and x.requires_grad and not self.training:
                raise RuntimeError(
                    f"{self.name}: an inference graph (no optimizer added) got an input that requires grad; "
                    f"autograd does not record graph calls, so pass x.detach() (or add an optimizer and call "
                    f"backward inside build)")

    def _variable_names(self):
        names = {}
        scaler = self.__dict__.get("_grad_scaler")
        if scaler is not None and scaler.is_enabled():
            from .amp import prepare_scaler

            names.update(prepare_scaler(scaler))
        for prefix, m in self._modules.items():
            for n, t in itertools.chain(m.named_parameters(prefix), m.named_buffers(prefix)):
                names.setdefault(id(t), n)
                _name_inner(names, t, n)
        for k, (opt, _) in enumerate(self._opts):
            pnames = {id(p): n for p, n in ((p, names.get(id(p))) for g in opt.param_groups for p in g["params"])}
            for p, state in opt.state.items():
                for key, t in state.items():
                    if isinstance(t, flow.Tensor):
                        names.setdefault(id(t), f"optimizer{k}.{pnames.get(id(p)) or 'param'}.{key}")
                        _name_inner(names, t, names[id(t)])
            for i, entry in enumerate(opt.__dict__.get("_lr_tensors", [])):
                if entry is not None:
                    names.setdefault(id(entry[0]), f"optimizer{k}.group{i}.lr")
        return names

    def _prepare(self):
        """What comes before a plan, traced or loaded: the optimizers adopt the parameters set_stage moved, and
        ZeRO shards the optimizers' parameters. Returns ``(staged modules, Stages or None)``."""
        staged = _pipeline.staged_modules(self._modules)
        stages = _pipeline.check(self.name, staged) if staged else None
        if staged:
            _pipeline.adopt_moved_parameters(self.name, staged, [opt for opt, _ in self._opts],
                                             self._modules.values())
        if self.config._zero is not None and self._opts and not self.__dict__.get("_zero_applied"):
            self._apply_zero()
        return staged, stages

    def _compile(self, args, kwargs):
        staged, stages = self._prepare()
        params = {id(p): p for m in self._modules.values() for p in m.parameters()}
        for opt, _ in self._opts:
            params.update((id(p), p) for g in opt.param_groups for p in g["params"])
            for i, group in enumerate(opt.param_groups):
                opt._lr_tensor(i, group)  # made now, eagerly, so the trace binds it as a variable
        saved_grads = [(p, p.grad) for p in params.values()]
        for p, _ in saved_grads:
            p.grad = None  # the graph's gradients live inside it
        stepped = []
        scaler = self.__dict__.get("_grad_scaler")
        scaled = None
        if scaler is not None and scaler.is_enabled() and self._opts:
            from .amp import ScaledStep

            scaled = ScaledStep(scaler)

        def optimizer_steps():
            mode = [m for m in current_modes() if isinstance(m, TraceMode)][-1]
            if any("optimizer" in n.op.traits for n in mode.ir.nodes):
                raise RuntimeError(f"{self.name}: build() must not call optimizer.step(): the graph steps the "
                                   f"optimizers added with add_optimizer() itself, after build()")
            if self._opts and not any(is_traced(p.grad) for p in params.values()):
                raise RuntimeError(f"{self.name}: a training graph (one with add_optimizer) must call "
                                   f"loss.backward() inside build(); no parameter received a gradient")
            for opt, _ in self._opts:
                if scaled is not None:
                    scaled.unscale(opt)
                for group in opt.param_groups:  # OneFlow's per-group gradient clipping
                    if group.get("clip_grad_max_norm") is not None:
                        flow.nn.utils.clip_grad_norm_(group["params"], group["clip_grad_max_norm"],
                                                      group.get("clip_grad_norm_type", 2.0))
                opt.step()
                if scaled is not None:
                    scaled.revert_if_found()
                opt.zero_grad(set_to_none=True)
                stepped.append(opt)
            if scaled is not None:
                scaled.update()

        try:
            build = self.build
            steps = self.config._grad_acc_steps if self.training else 1
            pipelined = stages is not None and len(stages) > 1 and steps > 1
            if steps > 1:  # build sees micro-batches; see accumulation.py
                from . import accumulation

                accumulation.check_inputs(self.name, self.build, args, kwargs, steps)
                build = accumulation.unrolled(self.build, steps)
            if scaled is not None:  # backward of loss * scale, after accumulation's loss / n
                build = scaled.scaled_build(build)
            if self.config._amp_dtype is not None:  # the casts eager autocast makes; see amp.py
                from .amp import autocast_build

                build = autocast_build(build, self.config._amp_dtype)
            with checkpoint_hooks(self._modules.values()) as checkpointed, \
                    _pipeline.stage_inputs(self.name, staged, pipelined) as stage_mark:
                ir = trace(_pipeline.marking_backwards(build, stage_mark) if staged else build, args, kwargs,
                           name=self.name, names=self._variable_names(), grad=self.training,
                           after=optimizer_steps if self._opts else None)
            if pipelined and stages.index is not None:
                _pipeline.schedule(ir, ir.micro_batches, stages.index, len(stages), self.config._pipeline_schedule)
        except BaseException:
            self._drop_traced_state()
            raise
        finally:
            for p, g in saved_grads:
                p.grad = g
        new_state = None
        if scaled is not None and scaler._dynamic:
            new_state = {(id(st), k) for opt, _ in self._opts for st in opt.state.values()
                         for k, t in st.items() if isinstance(t, Proxy)}
            if new_state:  # the call tells whether its step was skipped (then that state goes: see amp.py)
                ir.escaped.append((scaled.any_found._value, lambda t: self.__dict__.__setitem__("_found_inf", t)))
        one_shot = self._collect_escaped_state(ir)
        ir_before = ir.format(show_locations=True) if self._debug_level >= 1 else None
        report = _passes.run_default(ir, self.config._passes())
        if checkpointed and ir.__dict__.get("backward_nodes"):  # after CSE, which would merge the copies back
            report.append(("activation_checkpointing",
                           activation_checkpointing(ir, checkpointed, ir.__dict__["backward_nodes"])))
        report.extend((name, fn(ir)) for name, fn in self.config._late_passes())
        plan = Plan(ir, prologue_caches=self._prologue_caches(), compress_memory=self.config._compress_memory)
        self.__dict__["_compile_count"] += 1
        self.config._compiled = True
        example = ([describe(x) for x in flat_tensors(args, kwargs)], ir.outputs)
        entry = _Compiled(ir_before, ir, report, plan, one_shot, example)
        entry.scaler_new_state = new_state or None
        if self._debug_level >= 0:
            self._print_debug(entry)
        return entry

    def _apply_zero(self):
        """config.enable_zero: the optimizers' global parameters sharded by flow-dist's ZeRO, once, before the
        first trace (so the trace records the sharded update and its collectives)."""
        try:
            from oneflow_dist import zero
        except ImportError:
            raise RuntimeError(f"{self.name}: config.enable_zero needs flow-dist (pip install flow-dist) and "
                               f"global parameters") from None
        sharded = [p for opt, _ in self._opts for p in zero.shard_optimizer(opt, **self.config._zero)]
        if not sharded:
            raise RuntimeError(f"{self.name}: config.enable_zero found no global parameter to shard: ZeRO splits "
                               f"the state of parameters broadcast over several ranks (make the model global "
                               f"with module.to_global(placement, flow.sbp.broadcast)), none smaller than "
                               f"shard_min_size={self.config._zero['shard_min_size']}")
        self.__dict__["_zero_applied"] = True

    def _drop_traced_state(self):
        """After a failed trace: optimizer state the trace began to make holds traced tensors; it goes, so the
        optimizer is as it was (its next step, eager or traced, makes the state again)."""
        for opt, _ in self._opts:
            for p in list(opt.state):
                state = opt.state[p]
                for key in [k for k, t in state.items() if is_traced(t)]:
                    del state[key]
                if not state:
                    del opt.state[p]

    def _collect_escaped_state(self, ir):
        """Optimizer state made during the trace (first step: moments, momentum buffers, step counters) holds
        traced tensors; the plan hands their run-time tensors back to the optimizer. Such a plan builds state
        that later steps only update, so it serves that one call and the next call traces again."""
        one_shot = False
        for opt, _ in self._opts:
            for state in opt.state.values():
                for key, t in state.items():
                    if isinstance(t, Proxy):
                        ir.escaped.append((t._value, _setter(state, key)))
                        one_shot = True
                    elif is_wrapper(t) and is_traced(t):  # a global state tensor: its shard escapes
                        names, ctx = t.__tensor_flatten__()
                        if names != ["_local"] and len(names) != 1:
                            raise NotImplementedError(f"{self.name}: optimizer state of type {type(t).__name__} "
                                                      f"with several inner tensors")
                        ir.escaped.append((getattr(t, names[0])._value,
                                           _wrapped_setter(state, key, type(t), names[0], ctx, t)))
                        one_shot = True
        return one_shot

    # ---- state --------------------------------------------------------------------------------------------
    def state_dict(self, destination=None):
        r"""Returns a dictionary containing the whole state of the graph, as OneFlow's ``nn.Graph.state_dict``.

        Each module of the graph appears under its attribute name with its own ``state_dict()`` (parameters
        and persistent buffers); the optimizers' state tensors follow as flat entries named
        ``<parameter>-<state>`` (``model.0.weight-exp_avg``, ``model.0.weight-step``), and a grad scaler set with
        :meth:`set_grad_scaler` adds ``grad_scaler.scale`` and ``grad_scaler.growth_tracker``. The tensors share
        memory with the graph's (detached), as ``Module.state_dict`` does.

        Args:
            destination (dict, optional): filled and returned instead of a new ``OrderedDict``.

        Returns:
            dict: the graph's state.
        """
        from . import state

        sd = state.state_dict(self)
        if destination is None:
            return sd
        destination.update(sd)
        return destination

    def load_state_dict(self, state_dict, strict=True):
        r"""Copies the modules' states and the optimizers' state from :attr:`state_dict` into this graph.

        Everything is checked before anything is copied: with ``strict=True`` a missing or unexpected key, and
        in any mode a shape mismatch or a non-tensor value, raises ``RuntimeError`` listing every problem and
        leaves the graph unchanged. Values are copied into the existing tensors, so compiled plans see them; an
        optimizer that has not stepped yet receives its state as new tensors (the graph then compiles again).

        Args:
            state_dict (dict): as returned by :meth:`state_dict`.
            strict (bool): whether the keys must match this graph's exactly. Default: ``True``.
        """
        from . import state

        actions = state.plan_load(self, state_dict, strict)
        if state.apply_load(self, actions, strict):
            self._cache.clear()
            self.__dict__["_last"] = None

    def runtime_state_dict(self, destination=None, with_eager=False):
        r"""Returns the compiled graph as plain data, to be saved with ``flow.save`` and loaded, in this or a
        fresh process, by :meth:`load_runtime_state_dict` of a graph of the same class, which then runs without
        tracing or compiling.

        It holds each compiled input signature's optimised IR (ops by registry name, attributes, value shapes,
        dtypes and strides, the returned structure, constants' values; variables by the name of the parameter,
        buffer or optimizer state they are bound to) and the graph's :meth:`state_dict`. It holds no Python
        code or pickled objects, so ``flow.load`` reads it with its default ``weights_only=True``. Placements,
        sbps and global tensors (flow-dist) are held in their registered plain forms (see
        :mod:`oneflow_graph.plain_types`); a global tensor as this rank's shard with its placement, sbp and shape.

        In a job of several ranks the runtime state is per rank, as OneFlow's is: each rank's plan is its own (its
        shards, its pipeline stage's ops in its 1F1B order, its collectives), so every rank saves its own file
        (e.g. ``flow.save(graph.runtime_state_dict(), f"graph_rank{flow.env.get_rank()}")``) and loads it in a job
        of the same size on the same layout; loading another rank's file, in a job of another size, or into a
        graph whose tensors lie on another placement or sbp raises
        :class:`~oneflow_graph.runtime_state.RuntimeStateError`.

        Args:
            destination (dict, optional): filled and returned instead of a new dict.
            with_eager (bool): accepted for OneFlow compatibility (the state is always included).

        Returns:
            dict: the runtime state.

        Raises:
            RuntimeError: before the graph has a compiled plan (call it first).
            TypeError: when an input signature, an attribute or an output is not plain data.
        """
        from . import runtime_state

        sd = runtime_state.runtime_state_dict(self)
        if destination is None:
            return sd
        destination.update(sd)
        return destination

    def load_runtime_state_dict(self, state_dict, *, warmup_with_run=False):
        r"""Loads a runtime state written by :meth:`runtime_state_dict` of a graph of this class: the saved
        parameters, buffers and optimizer state go into this graph's modules and optimizers, and each saved
        signature's plan is bound to them, so the next call with that signature runs without tracing.

        The whole runtime state is checked first: a state from a graph of another class or set up differently
        (another optimizer count, a grad scaler or not), one whose variables name tensors this graph lacks or
        shapes it does not have, or a corrupted one raises :class:`~oneflow_graph.runtime_state.RuntimeStateError`
        (a ``RuntimeError``) with nothing loaded and the graph as it was.

        Args:
            state_dict (dict): as returned by :meth:`runtime_state_dict` (e.g. through ``flow.load``).
            warmup_with_run (bool): accepted for OneFlow compatibility (plans are ready without a warm-up run).
        """
        from . import runtime_state
        from .executor import Plan

        runtime_state.check_header(self, state_dict)
        self._prepare()  # the parameters and optimizer state the saved plans were traced against
        actions, decoded = runtime_state.plan_runtime_load(self, state_dict)
        loaded = runtime_state.apply_runtime_load(self, actions, decoded)
        for key, ir, example in loaded:
            entry = _Compiled(None, ir, [], Plan(ir, prologue_caches=self._prologue_caches(),
                                                 compress_memory=self.config._compress_memory), False,
                              (example, ir.outputs))
            self._remember(key, entry)
            self.__dict__["_last"] = entry
            self.config._compiled = True

    # ---- inspection ---------------------------------------------------------------------------------------
    def debug(self, v_level=0, *, ranks=None, max_py_stack_depth=2, only_user_py_stack=True,
              op_repr_with_py_stack=False):
        """Prints the compiled IR and the passes' statistics: now for a compiled graph, and at each later
        compile. ``v_level`` 0 prints the optimised IR; 1 also the traced IR before the passes, with the user
        source line of each op; -1 turns printing off. ``ranks`` and the stack options are accepted for
        OneFlow compatibility."""
        if not isinstance(v_level, int):
            raise TypeError(f"debug(): v_level must be an int, but got {type(v_level).__name__}")
        self.__dict__["_debug_level"] = v_level
        if v_level >= 0 and self._last is not None:
            self._print_debug(self._last)

    def _print_debug(self, entry):
        print(f"(GRAPH:{self.name}) compiled: {entry.ir.stats()['nodes']} ops, "
              f"{len(entry.ir.variables)} variables, {len(entry.ir.constants)} constants")
        for name, stats in entry.report:
            print(f"  pass {name}: " + ", ".join(f"{k}={v}" for k, v in stats.items()))
        pipe = getattr(entry.ir, "pipeline", None)
        if pipe is not None:
            name = {"1f1b": "1F1B", "zero_bubble": "zero-bubble (ZB-H1)"}[pipe["schedule"]]
            print(f"  pipeline: stage {pipe['stage']} of {pipe['stages']}, {pipe['micro_batches']} micro-batches, "
                  f"{name} order " + " ".join(f"{k}{j}" for k, j in pipe["order"]))
        mem = entry.plan.memory_stats()
        print("  memory plan: " + ("none (steps run as the Python loop)" if mem is None else
                                   ", ".join(f"{k}={v}" for k, v in mem.items())))
        if entry.plan.prologue is not None:  # held between calls, besides the arena (passes/hoist_variables.py)
            print("  prologue cache: " + ", ".join(f"{k}={v}" for k, v in entry.plan.prologue.stats().items()))
            if entry.plan.local_prologue is not None:
                print("  prologue cache of this signature: " +
                      ", ".join(f"{k}={v}" for k, v in entry.plan.local_prologue.stats().items()))
        if entry.ir_before is not None:
            print("IR before passes:\n" + entry.ir_before)
        print(entry.ir.format(show_locations=self._debug_level >= 1))

    def ir(self):
        """The optimised IR of the last call (None before the first call)."""
        return None if self._last is None else self._last.ir

    def __repr__(self):
        return graph_repr(self)


def _check_sparse(optim):
    """add_optimizer(is_sparse=True): the optimizer must hold a parameter with a sparse update (the hooks
    flow-embedding's tables set, which flow-core's Optimizer.step calls) and a sparse rule for each."""
    found = False
    for group in optim.param_groups:
        for p in group["params"]:
            if getattr(p, "_sparse_update", None) is None:
                continue
            found = True
            check = getattr(p, "_sparse_check", None)
            if check is not None:
                check(optim, group)
    if not found:
        raise ValueError(f"add_optimizer(is_sparse=True): {type(optim).__name__} holds no sparse (embedding) "
                         f"parameter; pass the parameters of a flow.one_embedding table, or is_sparse=False")


def _name_inner(names, t, name):
    # a global tensor reaches the graph as its shard: the shard is the variable, named like the tensor
    if is_wrapper(t):
        inner, _ = t.__tensor_flatten__()
        for n in inner:
            names.setdefault(id(getattr(t, n)), name if len(inner) == 1 else f"{name}.{n}")


def _wrapped_setter(state, key, cls, name, ctx, like):
    shape, stride = tuple(like.shape), like.stride()

    def put(t):
        state[key] = cls.__tensor_unflatten__({name: t}, ctx, shape, stride)

    return put


def _setter(state, key):
    def put(t):
        state[key] = t

    return put

