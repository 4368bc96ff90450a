"""The base class of exponential families (PyTorch's ``torch.distributions.ExponentialFamily``)."""
import oneflow as flow

from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Distributions with densities ``p(x; theta) = exp(<t(x), theta> - F(theta) + k(x))``: ``theta`` the natural
    parameters (:attr:`_natural_params`), ``F`` the log normalizer (:meth:`_log_normalizer`) and ``k`` the
    carrier measure, whose expectation is :attr:`_mean_carrier_measure`.

    Subclasses that give these three get :meth:`entropy` and, between two members of the same family,
    :func:`~oneflow.distributions.kl_divergence` from the Bregman divergence of ``F``, with the gradients of
    ``F`` computed by autograd.
    """

    @property
    def _natural_params(self):
        """A tuple of the natural parameters."""
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        """The log normalizer ``F`` as a function of the natural parameters."""
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        """The expected carrier measure E[k(x)]."""
        raise NotImplementedError

    def _log_normalizer_and_grads(self):
        """``F`` at detached copies of the natural parameters, those copies and dF/dtheta (differentiable)."""
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        with flow.enable_grad():
            lg_normal = self._log_normalizer(*nparams)
            grads = flow.autograd.grad(lg_normal.sum(), nparams, create_graph=True)
        return lg_normal, nparams, grads

    def entropy(self):
        """H = F(theta) - <theta, dF/dtheta> - E[k(x)], dF/dtheta being E[t(x)]."""
        lg_normal, nparams, grads = self._log_normalizer_and_grads()
        result = lg_normal - self._mean_carrier_measure
        for p, g in zip(nparams, grads):
            result = result - (p * g).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result
