"""PyTorch parity of the losses and activations of ``nn.functional`` at their edges: result dtypes when the
arguments' dtypes differ, integer and bool inputs, unbatched and empty inputs, weighted reductions, the argument
checks (the same exception type and wording as torch) and the order in which they run. Values and gradients
against torch."""
import warnings

import numpy as np
import pytest

import oneflow as flow
from helpers import assert_close, torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs torch")

RNG = np.random.default_rng(0)


def rand(*shape, dtype="float32"):
    return RNG.standard_normal(shape).astype(dtype)


def _dtype(lib, name):
    return None if name is None else getattr(lib, name)


def both(arr, grad=False, dtype=None):
    """The same data as a oneflow and a torch tensor (optionally cast to ``dtype`` and requiring grad)."""
    out = []
    for lib in (flow, torch):
        t = lib.tensor(np.asarray(arr))
        if dtype is not None:
            t = t.to(_dtype(lib, dtype))
        out.append(t.requires_grad_(True) if grad else t)
    return out


def run_both(name, args, kwargs=None):
    """``F.<name>`` of oneflow and of torch on the same arguments (pairs from ``both`` are split per library)."""
    kwargs = kwargs or {}
    res = []
    for i, lib in enumerate((flow, torch)):
        a = [x[i] if isinstance(x, list) else x for x in args]
        kw = {k: (v[i] if isinstance(v, list) else v) for k, v in kwargs.items()}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res.append(getattr(lib.nn.functional, name)(*a, **kw))
    return res


def check(name, args, kwargs=None, rtol=1e-5, atol=1e-6, grad=True):
    """Values, dtype and shape of oneflow's result against torch's, then (``grad``) the gradients of every input
    that requires grad."""
    f, t = run_both(name, args, kwargs)
    assert_close(f, t, rtol=rtol, atol=atol)
    if not (grad and t.requires_grad):
        return
    w = RNG.standard_normal(tuple(t.shape))
    (f * flow.tensor(w, dtype=f.dtype)).sum().backward()
    (t * torch.tensor(w, dtype=t.dtype)).sum().backward()
    for x in list(args) + list((kwargs or {}).values()):
        if isinstance(x, list) and isinstance(x[1], torch.Tensor) and x[1].requires_grad:
            assert_close(x[0].grad, x[1].grad, rtol=rtol * 10, atol=atol * 10)


# ---- values, dtypes and shapes ------------------------------------------------------------------------
def test_huber_weighted_mean_divides_by_the_element_count():
    # unlike mse/l1 (sum of weights), torch's weighted huber 'mean' is the plain mean of the weighted loss
    x, y, w = both(rand(3, 4), grad=True), both(rand(3, 4)), both(np.abs(rand(3, 4)))
    for delta in (0.5, 2.0):
        check("huber_loss", [x, y], {"weight": w, "delta": delta})
    check("mse_loss", [both(rand(3, 4), grad=True), y], {"weight": w})


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_huber_and_soft_margin_keep_the_input_dtype(reduction):
    for name in ("huber_loss", "soft_margin_loss"):
        grad = name != "huber_loss"  # torch's huber backward refuses a target of another dtype
        check(name, [both(rand(3, 4), grad=True), both(rand(3, 4), dtype="float64")], {"reduction": reduction},
              grad=grad)
        check(name, [both(rand(3, 4), grad=True, dtype="float16"), both(rand(3, 4))], {"reduction": reduction},
              rtol=1e-2, atol=1e-2, grad=grad)


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_bce_with_logits_result_has_the_target_dtype(reduction):
    x, t = rand(3, 4), np.abs(rand(3, 4)) / 3
    check("binary_cross_entropy_with_logits", [both(x, grad=True), both(t, dtype="float16")],
          {"reduction": reduction}, rtol=1e-2, atol=1e-2)
    check("binary_cross_entropy_with_logits", [both(x, grad=True, dtype="float64"), both(t)],
          {"reduction": reduction, "pos_weight": both(np.abs(rand(4)), dtype="float64")})
    check("binary_cross_entropy_with_logits", [both(x, grad=True), both(t)],
          {"reduction": reduction, "weight": both(np.abs(rand(4)), dtype="float64"),
           "pos_weight": both(np.abs(rand(3, 4)))})


def test_bce_weight_of_another_dtype_keeps_the_input_dtype():
    p = 1 / (1 + np.exp(-rand(3, 4)))
    for wd in ("float64", "int64"):
        check("binary_cross_entropy", [both(p, grad=True), both(np.round(p))],
              {"weight": both(np.abs(rand(4)) * 3, dtype=wd)})


def test_l1_and_smooth_l1_beta0_take_integer_tensors():
    a, b = np.array([[1, -2, 5]]), np.array([[3, 1, 5]])
    for dt in ("int64", "int32"):
        for red in ("none", "sum"):
            check("l1_loss", [both(a, dtype=dt), both(b, dtype=dt)], {"reduction": red})
            check("smooth_l1_loss", [both(a, dtype=dt), both(b, dtype=dt)], {"reduction": red, "beta": 0.0})
    check("smooth_l1_loss", [both(rand(3), grad=True), both(rand(3), dtype="float64")], {"beta": 0.0})


def test_kl_div_batchmean_of_an_empty_batch_is_nan():
    check("kl_div", [both(rand(0, 3), grad=True), both(rand(0, 3))], {"reduction": "batchmean"})


def test_hinge_embedding_integer_input_keeps_its_dtype():
    x, y = np.array([1, 2, 0, 4]), np.array([1, -1, -1, 3])
    for dt in ("int64", "int32"):
        check("hinge_embedding_loss", [both(x, dtype=dt), both(y)], {"reduction": "none", "margin": 2.7})
    check("hinge_embedding_loss", [both(rand(4), grad=True, dtype="float16"), both(y.astype("float32"))],
          {"margin": 0.1}, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_gaussian_nll_float_var_and_broadcast_var(reduction):
    kw = {"reduction": reduction, "full": True}
    check("gaussian_nll_loss", [both(rand(4, 3), grad=True), both(rand(4, 3)), 0.5], kw)
    check("gaussian_nll_loss", [both(rand(4, 3), grad=True), both(rand(4, 3)), both(np.abs(rand(1, 3)), grad=True)],
          kw)
    check("gaussian_nll_loss", [both(rand(4, 3, 2), grad=True), both(rand(4, 3, 2)),
                                both(np.abs(rand(4, 1, 2)), grad=True)], kw)


@pytest.mark.parametrize("ls", [-0.2, float("nan")])
def test_cross_entropy_label_smoothing_is_only_bounded_above(ls):
    probs = np.abs(rand(4, 5))
    check("cross_entropy", [both(rand(4, 5), grad=True), both(probs / probs.sum(1, keepdims=True))],
          {"label_smoothing": ls})
    check("cross_entropy", [both(rand(4, 5), grad=True), both(np.array([0, 1, 4, 2]))], {"label_smoothing": ls})


def test_cross_entropy_probabilities_accept_a_negative_ignore_index():
    probs = np.abs(rand(4, 5))
    check("cross_entropy", [both(rand(4, 5), grad=True), both(probs / probs.sum(1, keepdims=True))],
          {"ignore_index": -1})


def test_nll_loss_one_element_target_of_an_unbatched_input():
    for red in ("none", "mean"):  # torch's backward of this case fails on the sizes: values only
        check("nll_loss", [both(rand(5), grad=True), both(np.array([2]))], {"reduction": red}, grad=False)


def test_multi_margin_unreduced_loss_has_the_target_shape():
    check("multi_margin_loss", [both(rand(4), grad=True), both(np.array([2]))], {"reduction": "none"})
    check("multi_margin_loss", [both(rand(1, 4), grad=True), both(np.array(1))], {"reduction": "none"})
    check("multi_margin_loss", [both(rand(), grad=True), both(np.array([0]))], {"reduction": "none"})


def test_softmin_negates_in_the_input_dtype():
    # torch negates before casting to ``dtype``: an unsigned input wraps around
    check("softmin", [both(np.array([[0, 1, 3]], "uint8")), 1], {"dtype": [flow.float32, torch.float32]})
    check("softmin", [both(rand(2, 3), grad=True, dtype="float64"), 1], {"dtype": [flow.float32, torch.float32]})


def test_rrelu_training_on_a_0d_input():
    f, t = run_both("rrelu", [both(np.array(-2.0, "float32")), 0.3, 0.3, True])
    assert_close(f, t)


# ---- errors -------------------------------------------------------------------------------------------
def _probs():
    p = np.abs(rand(4, 5))
    return p / p.sum(1, keepdims=True)


ERROR_CASES = [
    # (id, function, args, kwargs, fragment of both messages)
    ("ce-probs-ignore-index", "cross_entropy", lambda: [both(rand(4, 5)), both(_probs())], {"ignore_index": 1},
     "ignore_index is not supported for floating point target"),
    ("ce-probs-weight-shape", "cross_entropy", lambda: [both(rand(4, 5)), both(_probs())],
     {"weight": lambda: both(np.ones((5, 1), "float32"))}, "weight tensor should be defined either for all 5"),
    ("ce-float-target-shape", "cross_entropy", lambda: [both(rand(4, 5)), both(rand(4))], {},
     "expected target dtype to be Long or Byte, but got Float"),
    ("ce-float-target-batch", "cross_entropy", lambda: [both(rand(4, 5)), both(rand(3))], {},
     "Expected input batch_size (4) to match target batch_size (3)"),
    ("ce-weight-dtype", "cross_entropy", lambda: [both(rand(4, 5)), both(np.array([0, 1, 2, 3]))],
     {"weight": lambda: both(np.ones(5), dtype="float64")}, "expected scalar type Float but found Double"),
    ("ce-smoothing-above-1", "cross_entropy", lambda: [both(rand(4, 5)), both(np.array([0, 1, 2, 3]))],
     {"label_smoothing": 1.5}, "label_smoothing must be between 0.0 and 1.0"),
    ("nll-0d", "nll_loss", lambda: [both(rand()), both(np.array(0))], {}, "Expected 1 or more dimensions (got 0)"),
    ("nll-int-input", "nll_loss", lambda: [both(np.ones((2, 3), "int64")), both(np.array([0, 1]))], {},
     "\"nll_loss_out_frame\" not implemented for 'Long'"),
    ("nll-float-target", "nll_loss", lambda: [both(rand(4, 5)), both(rand(4))], {},
     "expected target dtype to be Long or Byte, but got Float"),
    ("nll-2d-target", "nll_loss", lambda: [both(rand(4, 5)), both(np.zeros((4, 1), "int64"))], {},
     "0D or 1D target tensor expected, multi-target not supported"),
    ("nll-1d-input-3-targets", "nll_loss", lambda: [both(rand(5)), both(np.array([1, 2, 0]))], {},
     "For 1D input, 1D target must have size 1, but got target size: 3"),
    ("nll-weight-dtype", "nll_loss", lambda: [both(rand(4, 5, 2)), both(np.zeros((4, 2), "int64"))],
     {"weight": lambda: both(np.ones(5), dtype="float64")}, "expected scalar type Float but found Double"),
    ("bce-int", "binary_cross_entropy", lambda: [both(np.ones(2, "int64")), both(np.ones(2, "int64"))], {},
     "\"binary_cross_entropy\" not implemented for 'Long'"),
    ("bcel-int-target", "binary_cross_entropy_with_logits", lambda: [both(rand(3)), both(np.array([1, 0, 1]))], {},
     "result type Float can't be cast to the desired output type Long"),
    ("bcel-bool-target", "binary_cross_entropy_with_logits",
     lambda: [both(rand(3)), both(np.array([True, False, True]))], {}, "Subtraction, the `-` operator"),
    ("bcel-int-input", "binary_cross_entropy_with_logits", lambda: [both(np.array([1, 0])), both(rand(2))], {},
     "\"log_sigmoid_cpu\" not implemented for 'Long'"),
    ("huber-int-input", "huber_loss", lambda: [both(np.array([1, 2])), both(rand(2))], {},
     "result type Float can't be cast to the desired output type Long"),
    ("kl-int-target", "kl_div", lambda: [both(rand(3)), both(np.array([1, 0, 1]))], {"reduction": "sum"},
     "kl_div: Integral inputs not supported."),
    ("soft-margin-int", "soft_margin_loss", lambda: [both(np.array([1, 2])), both(np.array([1, -1]))], {},
     "result type Float can't be cast to the desired output type Long"),
    ("soft-margin-bool", "soft_margin_loss", lambda: [both(np.array([True])), both(np.ones(1, "float32"))], {},
     "Negation, the `-` operator, on a bool tensor"),
    ("soft-margin-target-bigger", "soft_margin_loss", lambda: [both(rand(3)), both(rand(2, 3))], {},
     "output with shape [3] doesn't match the broadcast shape [2, 3]"),
    ("gnll-negative-float-var", "gaussian_nll_loss", lambda: [both(rand(4, 3)), both(rand(4, 3)), -0.5], {},
     "var has negative entry/entries"),
    ("gnll-int-var", "gaussian_nll_loss", lambda: [both(rand(4, 3)), both(rand(4, 3)), both(np.ones((4, 3)),
                                                                                          dtype="int32")], {},
     "result type Float can't be cast to the desired output type int"),
    ("gnll-negative-before-size", "gaussian_nll_loss", lambda: [both(rand(4, 3)), both(rand(4, 3)),
                                                                both(-np.ones(2, "float32"))], {},
     "var has negative entry/entries"),
    ("mlsm-reduction", "multilabel_soft_margin_loss", lambda: [both(rand(2, 3)), both(np.ones((2, 3), "float32"))],
     {"reduction": "avg"}, "avg is not valid"),
    ("mlsm-0d", "multilabel_soft_margin_loss", lambda: [both(rand()), both(np.array(1.0, "float32"))], {},
     "Dimension specified as -1 but tensor has no dimensions"),
    ("mm-2d-target", "multi_margin_loss", lambda: [both(rand(3, 4)), both(np.zeros((3, 1), "int64"))], {},
     "target tensor should be 1-D with size equal to the number of input samples"),
    ("mm-float-target", "multi_margin_loss", lambda: [both(rand(3, 4)), both(np.zeros(3, "float32"))], {},
     "expected scalar type Long but found Float"),
    ("mm-weight-dtype", "multi_margin_loss", lambda: [both(rand(3, 4)), both(np.zeros(3, "int64"))],
     {"weight": lambda: both(np.ones(4), dtype="float64")}, "expected scalar type Float but found Double"),
    ("mm-weight-0d", "multi_margin_loss", lambda: [both(rand(3, 4)), both(np.zeros(3, "int64"))],
     {"weight": lambda: both(np.array(1.0, "float32"))}, "weight must be one-dimensional"),
    ("mm-weight-size", "multi_margin_loss", lambda: [both(rand(3, 4)), both(np.zeros(3, "int64"))],
     {"weight": lambda: both(np.ones(3, "float32"))}, "inconsistent weight size, expected 4 but got [3]"),
    ("mm-int-input", "multi_margin_loss", lambda: [both(np.ones((3, 4), "int64")), both(np.zeros(3, "int64"))], {},
     "\"multi_margin_loss_cpu_kernel\" not implemented for 'Long'"),
    ("mm-no-classes", "multi_margin_loss", lambda: [both(rand(3, 0)), both(np.zeros(3, "int64"))], {},
     "Expected non-empty vector or matrix with optional 0-dim batch size, but got: [3, 0]"),
    ("mlm-flat-target", "multilabel_margin_loss", lambda: [both(rand(3, 4)), both(np.zeros(12, "int64"))], {},
     "inconsistent target size: [12] for input of size: [3, 4]"),
    ("mlm-int32-target", "multilabel_margin_loss", lambda: [both(rand(3, 4)), both(np.zeros((3, 4), "int32"))], {},
     "expected scalar type Long but found Int"),
    ("mlm-int-input", "multilabel_margin_loss", lambda: [both(np.ones((3, 4), "int64")),
                                                         both(np.zeros((3, 4), "int64"))], {},
     "\"multilabel_margin_loss_forward_out_frame\" not implemented for 'Long'"),
    ("mlm-below-minus-1", "multilabel_margin_loss", lambda: [both(rand(1, 4)), both(np.array([[1, -2, 0, 0]]))], {},
     "argument #2 'target' is out of range"),
    ("mlm-out-of-range-after-end", "multilabel_margin_loss", lambda: [both(rand(1, 4)),
                                                                      both(np.array([[0, -1, 7, 0]]))], {},
     "argument #2 'target' is out of range"),
    ("cosine-embedding-dims", "cosine_embedding_loss", lambda: [both(rand(3, 4)), both(rand(4)), both(np.ones(3))],
     {}, "1D target tensor expects 2D input tensors, but found inputs with sizes [3, 4] and [4]."),
    ("triplet-distance-dims", "triplet_margin_with_distance_loss", lambda: [both(rand(3, 4)), both(rand(4)),
                                                                            both(rand(3, 4))], {},
     "expected to have the same number of dimensions"),
    ("triplet-distance-margin", "triplet_margin_with_distance_loss", lambda: [both(rand(3, 4))] * 3,
     {"margin": 0.0}, "margin must be greater than 0, got 0.0"),
    ("triplet-distance-reduction-first", "triplet_margin_with_distance_loss", lambda: [both(rand(3, 4))] * 3,
     {"margin": -1.0, "reduction": "avg"}, "avg is not a valid value for reduction"),
    ("glu-dim", "glu", lambda: [both(rand(2, 4))], {"dim": -3},
     "Dimension out of range (expected to be in range of [-2, 1], but got -3)"),
    ("rrelu-training-int", "rrelu", lambda: [both(np.ones(3, "int64"))], {"training": True},
     "\"rrelu_with_noise_out_cpu\" not implemented for 'Long'"),
    ("gumbel-int", "gumbel_softmax", lambda: [both(np.ones((2, 3), "int64"))], {},
     "Exponential distribution is a continuous probability distribution"),
    ("softmin-bool", "softmin", lambda: [both(np.array([[True, False]])), 1], {},
     "Negation, the `-` operator, on a bool tensor"),
]


@pytest.mark.parametrize("name,args,kwargs,fragment", [c[1:] for c in ERROR_CASES], ids=[c[0] for c in ERROR_CASES])
def test_errors_match_torch(name, args, kwargs, fragment):
    kwargs = {k: (v() if callable(v) else v) for k, v in kwargs.items()}
    errors = []
    for i, lib in enumerate((flow, torch)):
        a = [x[i] if isinstance(x, list) else x for x in args()]
        kw = {k: (v[i] if isinstance(v, list) else v) for k, v in kwargs.items()}
        with pytest.raises(Exception) as info, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            getattr(lib.nn.functional, name)(*a, **kw)
        errors.append(info.value)
    assert type(errors[0]) is type(errors[1]), errors
    for e in errors:
        assert fragment in str(e), (fragment, str(e))


@pytest.mark.parametrize("s1,s2,dim", [((4, 5), (1, 5), 0), ((2, 1, 3), (4, 3), -1), ((3,), (2, 3), 1)])
def test_cosine_similarity_takes_norms_after_broadcasting(s1, s2, dim):
    a, b = np.random.default_rng(1).standard_normal(s1), np.random.default_rng(2).standard_normal(s2)
    fa, fb = flow.tensor(a, requires_grad=True), flow.tensor(b, requires_grad=True)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    f, t = flow.nn.functional.cosine_similarity(fa, fb, dim=dim), torch.nn.functional.cosine_similarity(ta, tb, dim=dim)
    assert_close(f, t)
    f.sum().backward()
    t.sum().backward()
    assert_close(fa.grad, ta.grad)
    assert_close(fb.grad, tb.grad)


@pytest.mark.parametrize("p", [0.0, 0.5, 1.0, 2.0, float("inf")])
def test_pairwise_distance_of_0d_inputs_is_the_p_norm(p):
    assert_close(flow.nn.functional.pairwise_distance(flow.tensor(1.0), flow.tensor(3.0), p=p),
                 torch.nn.functional.pairwise_distance(torch.tensor(1.0), torch.tensor(3.0), p=p))
