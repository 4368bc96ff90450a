"""``graph.config``: the options of one graph (OneFlow's GraphConfig)."""
import oneflow as flow

from . import passes as _passes


class GraphConfig:
    """Options of an :class:`~oneflow_graph.Graph`. ``training`` is set by ``add_optimizer``; the pass
    switches turn passes of the default pipeline off (they are on by default)."""

    def __init__(self):
        self._training = False
        self._disabled = set()
        self._grad_acc_steps = 1
        self._amp_dtype = None  # None: no autocast
        self._compiled = False  # set at the graph's first compile: the options below are fixed from then on

    @property
    def training(self):
        return self._training

    def _train(self, mode):
        self._training = bool(mode)

    def enable_pass(self, name, mode=True):
        """Turns the pass ``name`` (``constant_folding``, ``cse``, ``dce``, ``copy_elision``) on or off."""
        known = [n for n, _ in _passes.DEFAULT]
        if name not in known:
            raise ValueError(f"unknown graph pass {name!r}; the passes are {known}")
        if mode:
            self._disabled.discard(name)
        else:
            self._disabled.add(name)

    def _passes(self):
        return tuple((n, f) for n, f in _passes.DEFAULT if n not in self._disabled)

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

    def _check_not_compiled(self, what):
        if self._compiled:
            raise RuntimeError(f"graph.config.{what}() must be called before the graph is first called: its "
                               f"compiled plans would not follow the change")

    def enable_zero(self, *args, **kwargs):
        raise NotImplementedError("graph.config.enable_zero needs the distributed package (flow-dist) support "
                                  "for graphs, which is not there yet")

    def enable_auto_parallel(self, *args, **kwargs):
        raise NotImplementedError("graph.config.enable_auto_parallel needs the distributed package (flow-dist) "
                                  "support for graphs, which is not there yet")

    def __repr__(self):
        acc = f"gradient_accumulation_steps={self._grad_acc_steps}, " if self._grad_acc_steps > 1 else ""
        amp = f"amp={self._amp_dtype}, " if self._amp_dtype is not None else ""
        return f"GraphConfig(training={self._training}, {amp}{acc})"
