"""``graph.config``: the options of one graph (OneFlow's GraphConfig)."""

import functools

import oneflow as flow

from . import passes as _passes


class GraphConfig:
    """Options of an :class:`~oneflow_graph.Graph`. ``training`` is set by ``add_optimizer``; the pass
    switches turn passes of the default pipeline off (they are on by default)."""

    def __init__(self):
        self._training = False
        self._disabled = set()
        self._optional = set()  # names of the passes of oneflow_graph.passes.OPTIONAL switched on
        self._grad_acc_steps = 1
        self._zero = None  # enable_zero: {"stage", "shard_min_size"}
        self._amp_dtype = None  # None: no autocast
        self._pipeline_schedule = "zero_bubble"
        self._compress_memory = False
        self._fuse_casts = False  # allow_fuse_cast_scale
        self._compiled = False  # set at the graph's first compile: the options below are fixed from then on

    @property
    def training(self):
        return self._training

    def _train(self, mode):
        self._training = bool(mode)

    def enable_pass(self, name, mode=True):
        """Turns the pass ``name`` of the default pipeline (``oneflow_graph.passes.DEFAULT``: ``constant_folding``,
        ``algebraic``, ``checkpoint_recompute``, ``cse``, ``dce``, ``copy_elision``, ``fold_conv_bn``,
        ``prepack_conv_weights``,
        ``fuse_softmax_cross_entropy``, ``fuse_elementwise``, then ``split_optimizer_updates`` and ``hoist_variables``)
        on or off, and the passes that are off by default (``oneflow_graph.passes.OPTIONAL``: ``fuse_add_to_output``)
        on; an unknown name raises ``ValueError`` listing them."""
        optional = [n for n, _, _ in _passes.OPTIONAL]
        if name in optional:  # off by default: its own switch (allow_fuse_add_to_output) turns it on too
            return self._switch_optional("enable_pass", name, mode)
        known = [n for n, _ in _passes.DEFAULT + _passes.LATE] + optional
        if name not in known:
            raise ValueError(f"unknown graph pass {name!r}; the passes are {known}")
        if mode:
            self._disabled.discard(name)
        else:
            self._disabled.add(name)

    def _passes(self):
        return self._pipeline(_passes.DEFAULT)

    def _late_passes(self):
        return self._pipeline(_passes.LATE)

    def _pipeline(self, passes):
        # the switched-on optional passes run right after the pass they name (even when that one is off)
        out = []
        for n, f in passes:
            if n == "fuse_elementwise" and self._fuse_casts:
                f = functools.partial(f, casts=True)
            if n not in self._disabled:
                out.append((n, f))
            out.extend((o, g) for o, g, after in _passes.OPTIONAL if after == n and o in self._optional)
        return tuple(out)

    def allow_fuse_add_to_output(self, mode=True):
        """Fuses an add into the matrix product that makes one of its operands, as OneFlow's option:
        ``add(mm(a, b), r)`` becomes ``r.addmm_(a, b)`` where ``r`` dies at the add (see
        ``oneflow_graph.passes.add_to_output``). Off by default: the product is accumulated into ``r`` by the
        GEMM, which rounds differently from adding afterwards. Set it before the graph's first call.

        Args:
            mode (bool): turn the fusion on or off. Default: ``True``.
        """
        self._switch_optional("allow_fuse_add_to_output", "fuse_add_to_output", mode)

    STRAIGHTEN_MODES = ("Disable", "SpeedFirst", "MemoryFirst", "OverlapCpuGpu", "DelayShortGpu")

    def enable_straighten_algorithm(self, mode="MemoryFirst"):
        """Chooses the order the graph's nodes run in, as OneFlow's straighten algorithm.

        ``"MemoryFirst"`` reorders the nodes so that fewer bytes are alive at once (pass
        ``straighten_memory_first``: a greedy list schedule over the data and memory dependencies, kept only where
        it lowers the live peak; results are bitwise the same). The other modes keep the traced order:
        ``"Disable"`` (the default), and ``"SpeedFirst"``, ``"OverlapCpuGpu"`` and ``"DelayShortGpu"``, which order
        nodes for overlapping streams and devices, of which the CPU plan has one (it runs one op at a time, each
        op using every thread). Set it before the graph's first call.

        Args:
            mode (str): one of ``"Disable"``, ``"SpeedFirst"``, ``"MemoryFirst"``, ``"OverlapCpuGpu"``,
                ``"DelayShortGpu"``. Default: ``"MemoryFirst"``.
        """
        if mode not in self.STRAIGHTEN_MODES:
            raise ValueError(f"enable_straighten_algorithm(): mode must be one of {list(self.STRAIGHTEN_MODES)}, "
                             f"but got {mode!r}")
        self._switch_optional("enable_straighten_algorithm", "straighten_memory_first", mode == "MemoryFirst")

    def allow_fuse_cast_scale(self, mode=True):
        """Lets dtype conversions join the elementwise fusion (pass ``fuse_elementwise``), as OneFlow's option that
        fuses a cast with the scaling after it: ``x.to(dtype) * scale`` runs as one pass over memory, each op
        still computed by its own kernel (the same bits). Off by default, as in OneFlow. Set it before the
        graph's first call.

        Args:
            mode (bool): let casts join fused chains or not. Default: ``True``.
        """
        self._check_bool_before_compile("allow_fuse_cast_scale", mode)
        self._fuse_casts = mode

    def allow_fuse_model_update_ops(self, mode=True):
        """OneFlow's option fusing the gradient's cast, scaling and L1/L2 regularisation into the model update.
        Here every optimizer's update is one registry op per parameter group (``sgd_update_``,
        ``adam_update_``, ...) that applies the weight decay and the step to all the group's parameters in one
        pass, with or without this option: it is accepted for code written for OneFlow and changes nothing. (A
        grad scaler's unscaling and overflow check run as their own pass before the update.)

        Args:
            mode (bool): Default: ``True``.
        """
        self._check_bool_before_compile("allow_fuse_model_update_ops", mode)

    def _check_bool_before_compile(self, what, mode):
        self._check_not_compiled(what)
        if not isinstance(mode, bool):
            raise TypeError(f"{what}(): mode must be a bool, but got {type(mode).__name__}")

    def _switch_optional(self, what, name, mode):
        self._check_bool_before_compile(what, mode)
        if mode:
            self._optional.add(name)
        else:
            self._optional.discard(name)

    def enable_amp(self, mode=True, *, dtype=flow.float16):
        """Runs ``build`` in automatic mixed precision, as inside ``oneflow.autocast(dtype=dtype)``: the graph
        computes with the same casts eager autocast code makes (its backward too). Set it before the graph's
        first call; combine it with :meth:`oneflow_graph.Graph.set_grad_scaler` for float16 training.

        Args:
            mode (bool): turn mixed precision on or off. Default: ``True``.
            dtype (oneflow.dtype): ``oneflow.float16`` (OneFlow's default) or ``oneflow.bfloat16``.
        """
        from .amp import check_dtype

        self._check_not_compiled("enable_amp")
        if not isinstance(mode, bool):
            raise TypeError(f"enable_amp(): mode must be a bool, but got {type(mode).__name__}")
        self._amp_dtype = check_dtype(dtype) if mode else None

    def set_gradient_accumulation_steps(self, value):
        """Sets the number of micro-batches a training graph call accumulates gradients over, as OneFlow.

        Each tensor input of the call is split into ``value`` micro-batches along dim 0 (which must be
        divisible by ``value``); ``build`` runs on each micro-batch, each ``loss.backward()`` back-propagates
        ``loss / value``, the gradients accumulate and the optimizers (with clipping and the lr scheduler) step
        once per call. Each output of ``build`` is returned packed along dim 0 over the micro-batches: a 0-dim
        loss comes back as a tensor of shape ``(value,)``, the loss of each micro-batch. Set it before the
        graph's first call.

        Args:
            value (int): the number of micro-batches (1: no accumulation).
        """
        from .accumulation import check_steps

        self._check_not_compiled("set_gradient_accumulation_steps")
        self._grad_acc_steps = check_steps(value)

    def enable_compress_memory(self, mode=True):
        """Plans the graph's memory arena harder, as OneFlow's memory compression: the core plan's planner tries
        several placement orders (largest first, by birth, by size x lifetime, by death; first and best fit) and
        keeps the smallest arena, at the cost of more compile time (the arena is never larger than without it).
        Set it before the graph's first call.

        Args:
            mode (bool): turn the search on or off. Default: ``True``.
        """
        self._check_bool_before_compile("enable_compress_memory", mode)
        self._compress_memory = mode

    def set_pipeline_schedule(self, schedule):
        """Sets the order in which each stage of a pipelined graph (stages given with ``set_stage``, micro-batches
        with :meth:`set_gradient_accumulation_steps`) runs its micro-batches. OneFlow has no such option (it
        runs 1F1B). Set it before the graph's first call; the results are the same in both (each gradient sums
        the micro-batches in the same order).

        Args:
            schedule (str): ``"zero_bubble"`` (the default): ZB-H1 (Qi et al., "Zero Bubble Pipeline
                Parallelism"): each backward is split into the part the previous stage waits for (what the
                gradient sent to it needs) and the weight gradients, which run later, where a 1F1B stage would
                wait for the next stage. A stage holds as many micro-batches between their forward and their
                input-gradient backward as under 1F1B (``stages - i`` on stage ``i``), and at most ``stages``
                (1F1B's first stage's count) between their forward and their weight gradients. ``"1f1b"``
                (PipeDream-Flush, as OneFlow and Megatron-LM): each stage alternates one micro-batch's forward
                and one's whole backward.
        """
        from .pipeline import SCHEDULES

        self._check_not_compiled("set_pipeline_schedule")
        if schedule not in SCHEDULES:
            raise ValueError(f"set_pipeline_schedule(): schedule must be one of {list(SCHEDULES)}, but got "
                             f"{schedule!r}")
        self._pipeline_schedule = schedule

    def _check_not_compiled(self, what):
        if self._compiled:
            raise RuntimeError(f"graph.config.{what}() must be called before the graph is first called: its "
                               f"compiled plans would not follow the change")

    def enable_zero(self, mode=True, *, stage=1, shard_min_size=1024, shard_restore_level=1):
        """ZeRO for a graph of global parameters: stage 1 shards the optimizer state over each replicated
        parameter's ranks, stage 2 also the gradients, stage 3 the parameters (``oneflow_dist.zero``, applied to
        the graph's optimizers when it compiles). ``shard_min_size``: parameters with fewer elements stay whole.
        ``shard_restore_level`` is OneFlow's choice of where stage-3 parameters are gathered; here the ops that
        use a split parameter gather what they need, so it is checked and recorded only."""
        if not isinstance(mode, bool):
            raise TypeError(f"enable_zero(): mode must be a bool, but got {type(mode).__name__}")
        if stage not in (1, 2, 3):
            raise ValueError(f"enable_zero(): stage must be 1, 2 or 3, but got {stage!r}")
        if isinstance(shard_min_size, bool) or not isinstance(shard_min_size, int) or shard_min_size < 0:
            raise ValueError(f"enable_zero(): shard_min_size must be an int >= 0, but got {shard_min_size!r}")
        if shard_restore_level not in (0, 1, 2):
            raise ValueError(f"enable_zero(): shard_restore_level must be 0, 1 or 2, but got {shard_restore_level!r}")
        self._zero = dict(stage=stage, shard_min_size=shard_min_size) if mode else None

    def enable_auto_parallel(self, *args, **kwargs):
        raise NotImplementedError("graph.config.enable_auto_parallel needs the distributed package (flow-dist) "
                                  "support for graphs, which is not there yet")

    def __repr__(self):
        acc = f"gradient_accumulation_steps={self._grad_acc_steps}, " if self._grad_acc_steps > 1 else ""
        amp = f"amp={self._amp_dtype}, " if self._amp_dtype is not None else ""
        return f"GraphConfig(training={self._training}, {amp}{acc})"
