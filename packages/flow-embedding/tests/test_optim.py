"""Sparse optimizer updates against a NumPy reference on the touched rows, and against flow.nn.Embedding with
the dense optimizer when every step touches the same rows (then lazy and dense updates coincide)."""
import numpy as np
import pytest
from helpers import make_emb, oe, rows_of

import oneflow as flow

DIM = 4


def np_update(name, opts, w, g, state, t):
    """One dense-formula step of optimizer ``name`` on row ``w`` (float64) with gradient ``g``."""
    lr = opts.get("lr", 1e-3)
    wd = opts.get("weight_decay", 0.0)
    if name == "sgd":
        g = g + wd * w
        mom = opts.get("momentum", 0.0)
        if mom:
            buf = state.get("buf")
            buf = g.copy() if buf is None else mom * buf + g
            state["buf"] = buf
            g = g + mom * buf if opts.get("nesterov") else buf
        return w - lr * g
    if name in ("adam", "adamw"):
        b1, b2 = opts.get("betas", (0.9, 0.999))
        eps = opts.get("eps", 1e-8)
        if name == "adamw":
            w = w * (1 - lr * wd)
        else:
            g = g + wd * w
        m = b1 * state.get("m", 0) + (1 - b1) * g
        v = b2 * state.get("v", 0) + (1 - b2) * g * g
        state["m"], state["v"] = m, v
        if opts.get("amsgrad"):
            v = state["vmax"] = np.maximum(state.get("vmax", 0), v)
        denom = np.sqrt(v) / np.sqrt(1 - b2 ** t) + eps
        return w - lr / (1 - b1 ** t) * m / denom
    if name == "adagrad":
        clr = lr / (1 + (t - 1) * opts.get("lr_decay", 0.0))
        g = g + wd * w
        s = state.get("sum", opts.get("initial_accumulator_value", 0.0)) + g * g
        state["sum"] = s
        return w - clr * g / (np.sqrt(s) + opts.get("eps", 1e-10))
    if name == "ftrl":
        p = -opts.get("lr_power", -0.5)
        l1, l2, beta = opts.get("lambda1", 0.0), opts.get("lambda2", 0.0), opts.get("beta", 0.0)
        g = g + wd * w
        n = state.get("n", opts.get("initial_accumulator_value", 0.1))
        z = state.get("z", 0.0)
        n_new = n + g * g
        sigma = (n_new ** p - n ** p) / lr
        z = z + g - sigma * w
        state["n"], state["z"] = n_new, z
        new = (np.sign(z) * l1 - z) / ((beta + n_new ** p) / lr + l2)
        return np.where(np.abs(z) <= l1, 0.0, new)
    raise AssertionError(name)


def make_opt(name, params, opts):
    cls = {"sgd": flow.optim.SGD, "adam": flow.optim.Adam, "adamw": flow.optim.AdamW,
           "adagrad": flow.optim.Adagrad, "ftrl": oe.Ftrl}[name]
    return cls(params, **opts)


CASES = [
    ("sgd", {"lr": 0.1}),
    ("sgd", {"lr": 0.1, "weight_decay": 0.05}),
    ("sgd", {"lr": 0.1, "momentum": 0.9}),
    ("sgd", {"lr": 0.1, "momentum": 0.8, "nesterov": True, "weight_decay": 0.01}),
    ("adam", {"lr": 0.05}),
    ("adam", {"lr": 0.05, "betas": (0.8, 0.9), "eps": 1e-3, "weight_decay": 0.1}),
    ("adam", {"lr": 0.05, "amsgrad": True}),
    ("adamw", {"lr": 0.05, "weight_decay": 0.2}),
    ("adagrad", {"lr": 0.1}),
    ("adagrad", {"lr": 0.1, "lr_decay": 0.1, "weight_decay": 0.05, "initial_accumulator_value": 0.5,
                 "eps": 1e-6}),
    ("ftrl", {"lr": 0.1}),
    ("ftrl", {"lr": 0.1, "lr_power": -0.7, "lambda1": 0.01, "lambda2": 0.1, "beta": 0.5,
              "initial_accumulator_value": 0.3, "weight_decay": 0.05}),
]
SIZE = {"sgd": 2, "adam": 4, "adamw": 3, "adagrad": 2, "ftrl": 3}


def _grad_weights(rng, n):
    return rng.standard_normal((n, DIM)).astype(np.float32)


@pytest.mark.parametrize("name,opts", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_sparse_update_matches_numpy(tmp_path, name, opts):
    rng = np.random.default_rng(0)
    emb = make_emb(tmp_path, dim=DIM, num_tables=2, size_factor=SIZE[name])
    opt = make_opt(name, emb.parameters(), opts)
    universe = [(t, i) for t in range(2) for i in range(12)]
    ref = {k: rows_of(emb, [k[1]], k[0])[0].astype(np.float64) for k in universe}
    state = {k: {} for k in universe}
    for step in range(1, 6):
        n = 10
        tables = rng.integers(0, 2, n).astype(np.int32)
        ids = rng.integers(0, 6 + step, n).astype(np.int64)  # later steps reach new rows; duplicates are likely
        ids[1], tables[1] = ids[0], tables[0]  # at least one duplicate
        wts = _grad_weights(rng, n)
        out = emb(flow.tensor(ids), flow.tensor(tables))
        (out * flow.tensor(wts)).sum().backward()
        opt.step()
        opt.zero_grad()
        grads = {}
        for t, i, wt in zip(tables, ids, wts):
            grads[(int(t), int(i))] = grads.get((int(t), int(i)), 0) + wt.astype(np.float64)
        for k, g in grads.items():
            ref[k] = np_update(name, opts, ref[k], g, state[k], step)
        for k in universe:  # touched rows follow the formula, the others are unchanged
            np.testing.assert_allclose(rows_of(emb, [k[1]], k[0])[0], ref[k], rtol=2e-5, atol=2e-6,
                                       err_msg=f"step {step} key {k}")


@pytest.mark.parametrize("name,opts", [c for c in CASES if c[0] != "ftrl"],
                         ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES) if n != "ftrl"])
def test_sparse_update_matches_dense_embedding(tmp_path, name, opts):
    rng = np.random.default_rng(1)
    emb = make_emb(tmp_path, dim=DIM, size_factor=SIZE[name])
    rows = 8
    dense = flow.nn.Embedding(rows, DIM)
    with flow.no_grad():
        dense.weight.copy_(flow.tensor(rows_of(emb, range(rows))))
    opt_s = make_opt(name, emb.parameters(), opts)
    opt_d = make_opt(name, dense.parameters(), opts)
    for _ in range(4):
        ids = np.concatenate([np.arange(rows), rng.integers(0, rows, 6)]).astype(np.int64)
        rng.shuffle(ids)
        wts = flow.tensor(_grad_weights(rng, ids.size))
        for module, opt in ((emb, opt_s), (dense, opt_d)):
            (module(flow.tensor(ids)) * wts).sum().backward()
            opt.step()
            opt.zero_grad()
    np.testing.assert_allclose(rows_of(emb, range(rows)), dense.weight.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_dense_and_sparse_ftrl_agree(tmp_path):
    emb = make_emb(tmp_path, dim=DIM, size_factor=3)
    w = flow.nn.Parameter(flow.tensor(rows_of(emb, [0, 1])))
    opts = {"lr": 0.2, "lambda1": 0.01, "lambda2": 0.1}
    opt_s, opt_d = oe.Ftrl(emb.parameters(), **opts), oe.Ftrl([w], **opts)
    g = flow.tensor(np.random.default_rng(2).standard_normal((2, DIM)).astype(np.float32))
    for _ in range(3):
        (emb(flow.tensor([0, 1])) * g).sum().backward()
        (w * g).sum().backward()
        opt_s.step(), opt_d.step()
        opt_s.zero_grad(), opt_d.zero_grad()
    np.testing.assert_allclose(rows_of(emb, [0, 1]), w.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_gradients_of_two_lookups_accumulate_and_zero_grad_clears(tmp_path):
    emb = make_emb(tmp_path, dim=DIM)
    opt = flow.optim.SGD(emb.parameters(), lr=1.0)
    before = rows_of(emb, [1, 2])
    (emb(flow.tensor([1])).sum() + emb(flow.tensor([1, 2])).sum()).backward()
    opt.step()
    np.testing.assert_allclose(rows_of(emb, [1, 2]), before - np.array([[2.0], [1.0]]), rtol=1e-6)
    opt.zero_grad()
    emb(flow.tensor([2])).sum().backward()
    opt.zero_grad()  # a cleared gradient updates nothing
    opt.step()
    np.testing.assert_allclose(rows_of(emb, [1, 2]), before - np.array([[2.0], [1.0]]), rtol=1e-6)


def test_optimizer_needs_state_columns(tmp_path):
    emb = make_emb(tmp_path, dim=DIM, size_factor=1)
    opt = flow.optim.Adam(emb.parameters(), lr=0.1)
    emb(flow.tensor([1])).sum().backward()
    with pytest.raises(ValueError, match="size_factor >= 3"):
        opt.step()


def test_optimizer_without_sparse_rule(tmp_path):
    emb = make_emb(tmp_path, dim=DIM, size_factor=3)
    opt = flow.optim.RMSprop(emb.parameters(), lr=0.1)
    emb(flow.tensor([1])).sum().backward()
    with pytest.raises(TypeError, match="RMSprop has no sparse update"):
        opt.step()


def test_sgd_dampening_is_rejected(tmp_path):
    emb = make_emb(tmp_path, dim=DIM, size_factor=2)
    opt = flow.optim.SGD(emb.parameters(), lr=0.1, momentum=0.9, dampening=0.1)
    emb(flow.tensor([1])).sum().backward()
    with pytest.raises(NotImplementedError, match="dampening"):
        opt.step()


@pytest.mark.parametrize("name,opts", [("adam", {"lr": 0.05}), ("adam", {"lr": 0.05, "amsgrad": True}),
                                       ("ftrl", {"lr": 0.1})])
def test_large_batch_update_matches_single_threaded_path(tmp_path, name, opts):
    # a batch of 20000 distinct rows takes the RAM tier's two-thread update; the cached tier's is one thread's
    ram = make_emb(tmp_path / "ram", dim=DIM, size_factor=SIZE[name])
    ssd = make_emb(tmp_path / "ssd", dim=DIM, size_factor=SIZE[name], kind="ssd", cache_mb=8)
    o_ram, o_ssd = make_opt(name, ram.parameters(), opts), make_opt(name, ssd.parameters(), opts)
    ids = np.arange(20000, dtype=np.int64)
    wts = flow.tensor(_grad_weights(np.random.default_rng(3), ids.size))
    for _ in range(2):
        for emb, opt in ((ram, o_ram), (ssd, o_ssd)):
            (emb(flow.tensor(ids)) * wts).sum().backward()
            opt.step()
            opt.zero_grad()
    got = rows_of(ram, ids)
    np.testing.assert_array_equal(got, rows_of(ssd, ids))
    assert not np.allclose(got, rows_of(make_emb(tmp_path / "init", dim=DIM), ids))
