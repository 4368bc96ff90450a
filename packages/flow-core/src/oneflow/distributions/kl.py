"""KL divergences between distributions (PyTorch's ``torch.distributions.kl``): closed forms registered per
pair of types with :func:`register_kl`, looked up by :func:`kl_divergence` (most specific match first)."""
import oneflow as flow

from .continuous import Exponential, Laplace, Normal, Uniform
from .discrete import Bernoulli, Categorical
from .multivariate_normal import MultivariateNormal

__all__ = ["register_kl", "kl_divergence"]

_KL_REGISTRY = {}


def register_kl(type_p, type_q):
    """Decorator registering ``fn(p, q)`` as KL(p || q) for ``p`` of ``type_p`` and ``q`` of ``type_q``."""
    def decorator(fn):
        _KL_REGISTRY[type_p, type_q] = fn
        return fn
    return decorator


def kl_divergence(p, q):
    """KL(p || q) per batch element; NotImplementedError when no closed form is registered."""
    matches = [(tp, tq) for tp, tq in _KL_REGISTRY if isinstance(p, tp) and isinstance(q, tq)]
    if not matches:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type {p.__class__.__name__} and q type "
                                  f"{q.__class__.__name__}")
    # the most derived pair: the one whose classes come first in p's and q's method resolution orders
    tp, tq = min(matches, key=lambda m: (type(p).__mro__.index(m[0]), type(q).__mro__.index(m[1])))
    return _KL_REGISTRY[tp, tq](p, q)


def _inf_where(t, mask):
    return flow.where(mask, flow.full_like(t, float("inf")), t)


def _zero_where(t, mask):
    return flow.where(mask, flow.zeros_like(t), t)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return _inf_where(result, (q.low > p.low) | (q.high < p.high))


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    rate_ratio = q.rate / p.rate
    return -rate_ratio.log() + rate_ratio - 1


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    return -scale_ratio.log() + loc_abs_diff / q.scale + scale_ratio * flow.exp(-loc_abs_diff / p.scale) - 1


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    softplus = flow.nn.functional.softplus
    t1 = p.probs * (softplus(-q.logits) - softplus(-p.logits))
    t1 = _zero_where(_inf_where(t1, q.probs == 0), p.probs == 0)
    t2 = (1 - p.probs) * (softplus(q.logits) - softplus(p.logits))
    t2 = _zero_where(_inf_where(t2, q.probs == 1), p.probs == 1)
    return t1 + t2


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = _inf_where(t, (q.probs == 0).expand_as(t))
    t = _zero_where(t, (p.probs == 0).expand_as(t))
    return t.sum(-1)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different event shapes cannot be "
                         "computed")
    lp, lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    half_term1 = lq.diagonal(dim1=-2, dim2=-1).log().sum(-1) - lp.diagonal(dim1=-2, dim2=-1).log().sum(-1)
    n = p.event_shape[0]
    batch = tuple(flow.broadcast_shapes(tuple(lq.shape[:-2]), tuple(lp.shape[:-2]), tuple(p.loc.shape[:-1]),
                                        tuple(q.loc.shape[:-1])))
    lq_b = lq.expand(batch + (n, n))
    term2 = flow.linalg.solve_triangular(lq_b, lp.expand(batch + (n, n)), upper=False).pow(2).sum((-2, -1))
    term3 = flow.linalg.solve_triangular(lq_b, (q.loc - p.loc).expand(batch + (n,)).unsqueeze(-1),
                                         upper=False).squeeze(-1).pow(2).sum(-1)  # tr(Sq^-1 Sp), Mahalanobis
    return half_term1 + 0.5 * (term2 + term3 - n)
