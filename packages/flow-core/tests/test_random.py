"""Random ops: Philox known answers, reproducibility, generators, statistics, thread independence, errors."""
import math

import numpy as np
import pytest

import oneflow as flow
from helpers import torch


def arr(t):
    t = t.detach()
    if t.dtype == flow.bfloat16:
        t = t.float()
    return np.array(t.numpy(), copy=True)


def test_philox_known_answers():
    # Random123's kat_vectors for philox4x32_10
    assert flow._C._philox4x32_10([0, 0, 0, 0], [0, 0]) == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    assert flow._C._philox4x32_10([0xFFFFFFFF] * 4, [0xFFFFFFFF] * 2) == [0x408F276D, 0x41C83B0E, 0xA20BC7C6,
                                                                         0x6D5451FD]
    assert flow._C._philox4x32_10([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], [0xA4093822, 0x299F31D0]) == [
        0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]


SAMPLERS = {
    "rand": lambda g=None: flow.rand(5, 7, generator=g),
    "randn": lambda g=None: flow.randn(5, 7, generator=g),
    "randn64": lambda g=None: flow.randn(33, dtype=flow.float64, generator=g),
    "randint": lambda g=None: flow.randint(-5, 5, (4, 9), generator=g),
    "randperm": lambda g=None: flow.randperm(50, generator=g),
    "normal": lambda g=None: flow.normal(2.0, 3.0, (6,), generator=g),
    "normal_t": lambda g=None: flow.normal(flow.zeros(4), flow.ones(4), generator=g),
    "bernoulli": lambda g=None: flow.bernoulli(flow.full((40,), 0.5), generator=g),
    "uniform_": lambda g=None: flow.empty(9).uniform_(-1, 1, generator=g),
    "exponential_": lambda g=None: flow.empty(9).exponential_(2.0, generator=g),
    "random_": lambda g=None: flow.empty(9, dtype=flow.int32).random_(0, 100, generator=g),
    "half": lambda g=None: flow.rand(9, dtype=flow.float16, generator=g),
    "bf16": lambda g=None: flow.randn(9, dtype=flow.bfloat16, generator=g),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_manual_seed_reproduces(name):
    f = SAMPLERS[name]
    flow.manual_seed(123)
    a, b = arr(f()), arr(f())
    flow.manual_seed(123)
    a2, b2 = arr(f()), arr(f())
    np.testing.assert_array_equal(a, a2)
    np.testing.assert_array_equal(b, b2)
    assert not np.array_equal(a, b)  # consecutive draws differ
    flow.manual_seed(124)
    assert not np.array_equal(arr(f()), a)


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_generator_objects(name):
    f = SAMPLERS[name]
    g1 = flow.Generator().manual_seed(7)
    g2 = flow.Generator()
    assert g2.manual_seed(7) is g2
    np.testing.assert_array_equal(arr(f(g1)), arr(f(g2)))
    # a private generator does not advance the default one
    flow.manual_seed(5)
    x = arr(f())
    flow.manual_seed(5)
    f(g1)
    np.testing.assert_array_equal(arr(f()), x)


def test_generator_state_round_trip():
    g = flow.Generator().manual_seed(3)
    flow.rand(10, generator=g)
    s = g.get_state()
    assert s.dtype == flow.uint8 and s.dim() == 1
    a = flow.rand(10, generator=g)
    g.set_state(s)
    np.testing.assert_array_equal(arr(flow.rand(10, generator=g)), arr(a))
    assert g.initial_seed() == 3
    st = flow.get_rng_state()
    b = flow.randn(5)
    flow.set_rng_state(st)
    np.testing.assert_array_equal(arr(flow.randn(5)), arr(b))
    with pytest.raises(RuntimeError, match="wrong size"):
        flow.set_rng_state(flow.zeros(3, dtype=flow.uint8))
    with pytest.raises(TypeError):
        flow.set_rng_state(flow.zeros(16))


def test_fork_rng_restores_state():
    flow.manual_seed(11)
    expected = arr(flow.rand(4))
    flow.manual_seed(11)
    with flow.random.fork_rng():
        flow.rand(100)
    np.testing.assert_array_equal(arr(flow.rand(4)), expected)


def test_seed_functions():
    assert flow.manual_seed(42) is flow.default_generator
    assert flow.initial_seed() == 42
    flow.manual_seed(-1)
    assert flow.initial_seed() == 2 ** 64 - 1
    s = flow.seed()
    assert isinstance(s, int) and flow.initial_seed() == s
    g = flow.Generator()
    assert g.initial_seed() == 67280421310721
    assert g.device == flow.device("cpu")
    with pytest.raises(RuntimeError):
        flow.manual_seed(2 ** 64)
    with pytest.raises(TypeError):
        flow.manual_seed("x")
    with pytest.raises(TypeError, match="generator"):
        flow.rand(3, generator=5)
    assert flow.random.initial_seed is not None and flow.random.manual_seed(1) is flow.default_generator


def test_independent_streams():
    g1, g2 = flow.Generator().manual_seed(1), flow.Generator().manual_seed(2)
    a, b = arr(flow.rand(100000, generator=g1)), arr(flow.rand(100000, generator=g2))
    assert abs(np.corrcoef(a, b)[0, 1]) < 0.02
    c = arr(flow.rand(100000, generator=g1))
    assert abs(np.corrcoef(a, c)[0, 1]) < 0.02
    assert abs(np.corrcoef(a[:-1], a[1:])[0, 1]) < 0.02


N = 1 << 20


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_uniform_statistics(dtype):
    flow.manual_seed(0)
    x = arr(flow.rand(N, dtype=getattr(flow, dtype))).astype(np.float64)
    assert x.min() >= 0 and x.max() < 1
    assert abs(x.mean() - 0.5) < 0.005 and abs(x.std() - (1 / 12) ** 0.5) < 0.005
    y = arr(flow.empty(N, dtype=getattr(flow, dtype)).uniform_(-2, 3)).astype(np.float64)
    assert y.min() >= -2 and y.max() <= 3 and abs(y.mean() - 0.5) < 0.02
    hist = np.histogram(x, bins=10, range=(0, 1))[0] / N
    assert np.all(np.abs(hist - 0.1) < 0.01)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_normal_statistics(dtype):
    flow.manual_seed(0)
    tol = 0.01 if dtype in ("float32", "float64") else 0.03
    x = arr(flow.randn(N, dtype=getattr(flow, dtype))).astype(np.float64)
    assert abs(x.mean()) < tol and abs(x.std() - 1) < tol
    assert abs(np.mean(np.abs(x) < 1) - 0.6827) < 0.01
    y = arr(flow.empty(N, dtype=getattr(flow, dtype)).normal_(3.0, 2.0)).astype(np.float64)
    assert abs(y.mean() - 3) < 3 * tol and abs(y.std() - 2) < 3 * tol
    z = arr(flow.normal(-1.0, 0.5, size=(N,), dtype=getattr(flow, dtype))).astype(np.float64)
    assert abs(z.mean() + 1) < tol and abs(z.std() - 0.5) < tol


def test_float32_normals_follow_the_normal_cdf():
    # the vectorised Box-Muller transform: the empirical CDF at many points, for the cos and sin halves
    # separately (even and odd positions), and no correlation between the two halves of a pair
    flow.manual_seed(1)
    x = arr(flow.randn(1 << 20)).astype(np.float64)
    for part in (x[0::2], x[1::2]):
        for q in (-3.5, -2.5, -1.7, -1.0, -0.4, 0.0, 0.3, 0.9, 1.6, 2.4, 3.2):
            want = 0.5 * (1 + math.erf(q / math.sqrt(2)))
            assert abs(np.mean(part <= q) - want) < 2.5e-3, q
    assert abs(np.corrcoef(x[0::2], x[1::2])[0, 1]) < 5e-3
    assert np.isfinite(x).all() and np.abs(x).max() < 7


def test_exponential_statistics():
    flow.manual_seed(0)
    for dtype in (flow.float32, flow.float64):
        x = arr(flow.empty(N, dtype=dtype).exponential_(4.0))
        assert x.min() >= 0 and abs(x.mean() - 0.25) < 0.005 and abs(x.std() - 0.25) < 0.005


@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "int8", "uint8", "float32", "float64"])
def test_randint_range_and_coverage(dtype):
    flow.manual_seed(0)
    low = 0 if dtype == "uint8" else -3
    x = arr(flow.randint(low, 7, (100000,), dtype=getattr(flow, dtype)))
    assert x.min() == low and x.max() == 6
    counts = np.bincount((x - low).astype(np.int64))
    assert np.all(np.abs(counts / len(x) - 1 / (7 - low)) < 0.01)
    assert flow.randint(5, (3,)).dtype == flow.int64
    assert flow.randint(3, 5, size=(2, 2)).shape == (2, 2)
    assert flow.randint(low=1, high=2, size=(4,)).tolist() == [1, 1, 1, 1]


def test_randint_large_ranges():
    x = arr(flow.randint(-2 ** 62, 2 ** 62, (10000,)))
    assert x.min() < -2 ** 60 and x.max() > 2 ** 60
    y = arr(flow.empty(10000, dtype=flow.int64).random_())
    assert y.min() >= 0 and y.max() > 2 ** 61
    z = arr(flow.empty(1000, dtype=flow.uint8).random_())
    assert z.min() == 0 and z.max() == 255
    b = arr(flow.empty(1000, dtype=flow.bool).random_())
    assert b.any() and not b.all()
    f = arr(flow.empty(10000).random_(5))
    assert set(np.unique(f).tolist()) == {0, 1, 2, 3, 4}
    h = arr(flow.empty(100000, dtype=flow.float16).random_())
    assert h.min() >= 0 and h.max() <= 2048 and np.all(h == np.round(h))
    r = arr(flow.empty(100, dtype=flow.int8).random_(-5, to=None))
    assert r.min() >= -5


@pytest.mark.parametrize("n", [0, 1, 2, 10, 1000, 100003])
def test_randperm_is_a_permutation(n):
    p = flow.randperm(n)
    assert p.dtype == flow.int64 and p.shape == (n,)
    np.testing.assert_array_equal(np.sort(arr(p)), np.arange(n))


def test_randperm_dtypes_and_uniformity():
    for d in [flow.int32, flow.float32, flow.float64, flow.int16]:
        p = flow.randperm(20, dtype=d)
        assert p.dtype == d
        np.testing.assert_array_equal(np.sort(arr(p)), np.arange(20))
    flow.manual_seed(0)
    firsts = np.array([flow.randperm(4).tolist()[0] for _ in range(4000)])
    assert np.all(np.abs(np.bincount(firsts) / 4000 - 0.25) < 0.03)
    with pytest.raises(RuntimeError, match="n must be non-negative"):
        flow.randperm(-1)
    with pytest.raises(RuntimeError, match="too large"):
        flow.randperm(300, dtype=flow.int8)


def test_bernoulli():
    flow.manual_seed(0)
    for p in (0.1, 0.5, 0.9):
        x = arr(flow.bernoulli(flow.full((N,), p)))
        assert set(np.unique(x).tolist()) <= {0.0, 1.0} and abs(x.mean() - p) < 0.005
        y = arr(flow.bernoulli(flow.zeros(N), p))
        assert abs(y.mean() - p) < 0.005
    probs = flow.tensor([0.0, 1.0, 0.0, 1.0], dtype=flow.float64)
    r = flow.bernoulli(probs)
    assert r.dtype == flow.float64 and r.tolist() == [0, 1, 0, 1]
    # probabilities from a strided view
    q = flow.tensor([[0.0, 1.0], [0.0, 1.0]]).t()
    assert flow.bernoulli(q).tolist() == [[0, 0], [1, 1]]
    t = flow.empty(1000, dtype=flow.int32).bernoulli_(0.3)
    assert t.dtype == flow.int32 and abs(arr(t).mean() - 0.3) < 0.05
    u = flow.empty(4).bernoulli_(flow.tensor([1.0, 0.0, 1.0, 0.0]))
    assert u.tolist() == [1, 0, 1, 0]
    b = flow.empty(N, dtype=flow.bool).bernoulli_()
    assert abs(arr(b).mean() - 0.5) < 0.005
    assert flow.full((3,), 0.7).bernoulli().shape == (3,)


def test_bernoulli_errors():
    with pytest.raises(RuntimeError, match=r"p_in >= 0 && p_in <= 1"):
        flow.bernoulli(flow.tensor([0.5, 1.5]))
    with pytest.raises(RuntimeError, match=r"p_in >= 0 && p_in <= 1"):
        flow.bernoulli(flow.tensor([float("nan")]))
    with pytest.raises(RuntimeError, match=r"expects p to be in \[0, 1\]"):
        flow.empty(3).bernoulli_(1.5)
    with pytest.raises(RuntimeError):
        flow.bernoulli(flow.ones(3, dtype=flow.int64))


def test_random_errors_match_torch_wording():
    with pytest.raises(RuntimeError, match=r"uniform_ expects to return a \[from, to\) range, but found from=1 > to=0"):
        flow.empty(3).uniform_(1, 0)
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0, but found std -1"):
        flow.empty(3).normal_(0, -1)
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0"):
        flow.normal(0.0, -1.0, (3,))
    with pytest.raises(RuntimeError, match="normal expects all elements of std >= 0.0"):
        flow.normal(flow.zeros(3), -flow.ones(3))
    with pytest.raises(RuntimeError, match="exponential_ expects lambda > 0.0"):
        flow.empty(3).exponential_(0)
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to', but got from=5 >= to=5"):
        flow.randint(5, 5, (2,))
    with pytest.raises(RuntimeError, match="out of bounds"):
        flow.empty(3, dtype=flow.uint8).random_(-1, 5)
    with pytest.raises(NotImplementedError):
        flow.rand(2, dtype=flow.int64)
    with pytest.raises(NotImplementedError):
        flow.randn(2, dtype=flow.int32)
    with pytest.raises(NotImplementedError):
        flow.normal(flow.zeros(3, dtype=flow.int64), 1.0)
    with pytest.raises(TypeError):
        flow.randint(5)


def test_normal_overloads_match_torch_shapes_and_dtypes():
    cases = [
        (lambda m, s: m.normal(m.zeros(2, 3), m.ones(2, 3)), None),
        (lambda m, s: m.normal(m.zeros(2, 1), m.ones(3)), None),
        (lambda m, s: m.normal(m.zeros(4, dtype=getattr(m, "float64")), 2.0), None),
        (lambda m, s: m.normal(1.0, m.ones(5)), None),
        (lambda m, s: m.normal(0.0, 1.0, size=(2, 2)), None),
        (lambda m, s: m.normal(0.0, 1.0, (3,), dtype=getattr(m, "float64")), None),
    ]
    for fn, _ in cases:
        f, t = fn(flow, None), fn(torch, None)
        assert tuple(f.shape) == tuple(t.shape)
        assert str(f.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    flow.manual_seed(0)
    mean, std = flow.tensor([0.0, 100.0]), flow.tensor([1.0, 0.0])
    x = flow.normal(mean, std)
    assert x.tolist()[1] == 100.0
    m = arr(flow.normal(flow.full((N,), 5.0), flow.full((N,), 2.0)))
    assert abs(m.mean() - 5) < 0.02 and abs(m.std() - 2) < 0.02


def test_normal_gradients_are_zero_like_torch():
    m = flow.zeros(3, requires_grad=True)
    s = flow.ones(3, requires_grad=True)
    y = flow.normal(m, s)
    assert y.requires_grad and y.grad_fn is not None
    y.sum().backward()
    assert m.grad.tolist() == [0, 0, 0] and s.grad.tolist() == [0, 0, 0]
    p = flow.full((3,), 0.5, requires_grad=True)
    b = flow.bernoulli(p)
    assert b.requires_grad
    (b * 2).sum().backward()
    assert p.grad.tolist() == [0, 0, 0]


def test_inplace_random_autograd_rules():
    w = flow.empty(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        w.uniform_()
    with flow.no_grad():
        w.uniform_()
        w.normal_()
    assert w.requires_grad and w.is_leaf
    v = w * 1
    v.normal_()
    v.sum().backward()
    assert w.grad.tolist() == [0, 0, 0]
    assert flow.randn(2, requires_grad=True).requires_grad


def test_like_functions():
    x = flow.zeros(2, 3, dtype=flow.float64)
    for f in (flow.rand_like, flow.randn_like):
        y = f(x)
        assert y.shape == x.shape and y.dtype == flow.float64
        assert f(x, dtype=flow.float32).dtype == flow.float32
    r = flow.randint_like(x, 10)
    assert r.dtype == flow.float64 and arr(r).max() < 10
    r2 = flow.randint_like(flow.zeros(100, dtype=flow.int32), 3, 5)
    assert r2.dtype == flow.int32 and set(np.unique(arr(r2)).tolist()) == {3, 4}
    g = flow.Generator().manual_seed(9)
    a = flow.rand_like(x, generator=g)
    g.manual_seed(9)
    np.testing.assert_array_equal(arr(flow.rand_like(x, generator=g)), arr(a))


def test_size_forms_and_zero_size():
    assert flow.rand(2, 3).shape == (2, 3)
    assert flow.rand((2, 3)).shape == (2, 3)
    assert flow.randn([4]).shape == (4,)
    assert flow.randn(flow.Size([1, 2])).shape == (1, 2)
    assert flow.rand(()).shape == ()
    assert flow.rand(0, 3).shape == (0, 3)
    assert flow.randn(size=(2,)).shape == (2,)
    assert flow.empty(0).uniform_().shape == (0,)
    assert flow.bernoulli(flow.empty(0, 2)).shape == (0, 2)
    out = flow.empty(3)
    assert flow.rand(3, out=out) is out


def test_non_contiguous_fill_is_logical_order():
    g = flow.Generator().manual_seed(4)
    base = flow.empty(6, 4)
    base.t().uniform_(generator=g)  # fills the (4, 6) view in its own row-major order
    g.manual_seed(4)
    ref = flow.empty(4, 6).uniform_(generator=g)
    np.testing.assert_array_equal(arr(base.t()), arr(ref))
    # a strided slice: only its elements change
    x = flow.zeros(10)
    flow.slice(x, 0, 0, 10, 2).normal_()
    v = arr(x)
    assert np.all(v[1::2] == 0) and np.all(v[::2] != 0)


@pytest.mark.parametrize("name", ["rand", "randn", "randn64", "randint", "bernoulli", "randperm", "exponential",
                                  "half"])
def test_same_results_with_one_and_two_threads(name):
    big = 3 * (1 << 18) + 5  # above the parallel grain, odd length
    fns = {
        "rand": lambda: flow.rand(big),
        "randn": lambda: flow.randn(big),
        "randn64": lambda: flow.randn(big, dtype=flow.float64),
        "randint": lambda: flow.randint(0, 1000, (big,)),
        "bernoulli": lambda: flow.bernoulli(flow.full((big,), 0.3)),
        "randperm": lambda: flow.randperm(big),
        "exponential": lambda: flow.empty(big).exponential_(),
        "half": lambda: flow.randn(big, dtype=flow.float16),
    }
    prev = flow.get_num_threads()
    try:
        flow.set_num_threads(1)
        flow.manual_seed(77)
        a = arr(fns[name]())
        flow.set_num_threads(2)
        flow.manual_seed(77)
        b = arr(fns[name]())
    finally:
        flow.set_num_threads(prev)
    np.testing.assert_array_equal(a, b)


def test_random_ops_registered_with_random_trait():
    ops = {o["name"]: o for o in flow.list_ops()}
    for name in ["uniform", "uniform_", "normal_", "bernoulli", "random_", "randperm", "exponential_"]:
        assert "random" in ops[name]["traits"], ops[name]
    assert isinstance(flow.random, type(np))  # oneflow.random is the module, as torch.random


def test_multinomial_distributions():
    flow.manual_seed(0)
    p = flow.tensor([0.1, 0.0, 0.6, 0.3])
    s = flow.multinomial(p, 200_000, replacement=True)
    assert s.dtype == flow.int64 and tuple(s.shape) == (200_000,)
    freq = np.bincount(s.numpy(), minlength=4) / 200_000
    np.testing.assert_allclose(freq, [0.1, 0.0, 0.6, 0.3], atol=5e-3)
    assert freq[1] == 0  # a zero weight is never drawn with replacement
    # without replacement: the sequential-draw law, first and second pick; unnormalised weights
    r = flow.tensor([5.0, 3.0, 2.0]).expand(100_000, 3).contiguous().multinomial(2).numpy()
    assert (r[:, 0] != r[:, 1]).all()
    np.testing.assert_allclose(np.bincount(r[:, 0], minlength=3) / 1e5, [0.5, 0.3, 0.2], atol=6e-3)
    second = [0.3 * 0.5 / 0.7 + 0.2 * 0.5 / 0.8, 0.5 * 0.3 / 0.5 + 0.2 * 0.3 / 0.8, 0.5 * 0.2 / 0.5 + 0.3 * 0.2 / 0.7]
    np.testing.assert_allclose(np.bincount(r[:, 1], minlength=3) / 1e5, second, atol=6e-3)
    # rows are independent; zero weights come last once the positive ones are used up (as in torch)
    w = flow.tensor([[1.0, 2.0, 0.0, 7.0], [0.0, 0.0, 5.0, 5.0]])
    out = w.multinomial(3)
    assert tuple(out.shape) == (2, 3)
    assert set(out[0].tolist()) == {0, 1, 3} and set(out[1, :2].tolist()) == {2, 3}
    # a generator makes it reproducible; out= is written
    g1, g2 = flow.Generator().manual_seed(5), flow.Generator().manual_seed(5)
    o = flow.empty(0, dtype=flow.int64)
    flow.multinomial(w, 4, replacement=True, generator=g1, out=o)
    np.testing.assert_array_equal(o.numpy(), flow.multinomial(w, 4, True, generator=g2).numpy())


def test_multinomial_errors_match_torch():
    cases = [lambda L: L.multinomial(L.tensor([0.5, float("nan")]), 1),
             lambda L: L.multinomial(L.tensor([0.5, -1.0]), 1),
             lambda L: L.multinomial(L.tensor([0.5, float("inf")]), 1),
             lambda L: L.multinomial(L.tensor([0.0, 0.0]), 1),
             lambda L: L.multinomial(L.tensor([0.5, 0.5]), 3),
             lambda L: L.multinomial(L.ones(2, 2, 2), 1),
             lambda L: L.multinomial(L.tensor([1, 2]), 1),
             lambda L: L.multinomial(L.tensor([0.5, 0.5]), 0)]
    for case in cases:
        with pytest.raises(RuntimeError) as want:
            case(torch)
        with pytest.raises(RuntimeError) as got:
            case(flow)
        assert str(got.value) == str(want.value)


@pytest.mark.parametrize("name,err,msg", [
    ("exponential_", RuntimeError, "Exponential distribution is a continuous probability distribution. dtype must "
                                    "be a floating point but you specified Long"),
    ("normal_", NotImplementedError, "\"normal_kernel_cpu\" not implemented for 'Long'"),
    ("uniform_", NotImplementedError, "\"check_uniform_bounds\" not implemented for 'Long'"),
])
def test_continuous_fills_refuse_integer_tensors_like_torch(name, err, msg):
    for lib in (flow, torch):
        with pytest.raises(err) as e:
            getattr(lib.ones(3, dtype=lib.int64), name)()
        assert msg in str(e.value)
