"""AdaptiveLogSoftmaxWithLoss (Grave et al., "Efficient softmax approximation for GPUs")."""
from collections import namedtuple

from ... import _C
from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ops = _C.ops
_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Log-softmax over ``n_classes`` split at ``cutoffs`` into a frequent-class head and tail clusters with
    down-projected (by ``div_value`` per cluster) inputs. ``forward(input, target)`` returns
    ``(output, loss)``: each target's log-probability and the mean negative log-likelihood."""

    def __init__(self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False, device=None, dtype=None):
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > (n_classes - 1)
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in an increasing "
                             "order, where each value is between 1 and n_classes-1")
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(self.in_features, self.head_size, bias=self.head_bias, **kw)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(self.in_features // (self.div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(self.in_features, hsz, bias=False, **kw),
                                        Linear(hsz, osz, bias=False, **kw)))

    def reset_parameters(self):
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_, target_):
        targ_dim = target_.dim()
        if targ_dim == 1:
            if input_.size(0) != target_.size(0):
                raise RuntimeError("Input and target should have the same size in the batch dimension.")
            if input_.dim() != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with size "
                                   f"{input_.size()}")
        elif targ_dim == 0:
            if input_.dim() != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with size "
                                   f"{input_.size()}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = targ_dim > 0
        input = input_ if batched else _ops.unsqueeze(input_, 0)
        target = target_ if batched else _ops.unsqueeze(target_, 0)
        if target.numel() and (bool((target < 0).any()) or bool((target >= self.n_classes).any())):
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                               f"[{target.min().item()}, {target.max().item()}] were found. ")
        import oneflow as flow

        # head column of each target: the class itself in the shortlist, else its cluster's column
        gather_inds = target
        output = None
        for i, (low, high) in enumerate(zip(self.cutoffs[:-1], self.cutoffs[1:])):
            mask = (target >= low) & (target < high)
            gather_inds = _ops.where(mask, target * 0 + (self.shortlist_size + i), gather_inds)
            rows = _ops.reshape(_ops.nonzero(mask), [-1])
            if rows.numel() == 0:
                continue
            cluster_logprob = F.log_softmax(self.tail[i](_ops.index_select(input, 0, rows)), dim=1)
            local = _ops.gather(cluster_logprob, 1, _ops.unsqueeze(_ops.index_select(target, 0, rows) - low, 1))
            zeros = flow.zeros(target.shape[0], dtype=input.dtype, device=input.device)
            part = _ops.index_add(zeros, 0, rows, _ops.reshape(local, [-1]))
            output = part if output is None else output + part
        head_logprob = F.log_softmax(self.head(input), dim=1)
        head_part = _ops.reshape(_ops.gather(head_logprob, 1, _ops.unsqueeze(gather_inds, 1)), [-1])
        output = head_part if output is None else output + head_part
        loss = _ops.mean(_ops.neg(output))
        if not batched:
            output = _ops.squeeze_dim(output, 0)
        return _ASMoutput(output, loss)

    def _get_full_log_prob(self, input, head_output):
        head_logprob = F.log_softmax(head_output, dim=1)
        pieces = [head_logprob[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster_logprob = F.log_softmax(self.tail[i](input), dim=1)
            col = self.shortlist_size + i
            pieces.append(cluster_logprob + head_logprob[:, col:col + 1])
        return _ops.cat(pieces, 1)

    def log_prob(self, input):
        """Log-probabilities of all ``n_classes`` for each row of an (N, in_features) input."""
        return self._get_full_log_prob(input, self.head(input))

    def predict(self, input):
        """The most probable class of each row: ``log_prob(input).argmax(dim=1)``, skipping the tail clusters
        when every row's head prediction is in the shortlist."""
        head_output = self.head(input)
        output = _ops.argmax(head_output, 1)
        not_in_shortlist = output >= self.shortlist_size
        if not bool(not_in_shortlist.any()):
            return output
        full = _ops.argmax(self._get_full_log_prob(input, head_output), 1)
        return _ops.where(not_in_shortlist, full, output)
