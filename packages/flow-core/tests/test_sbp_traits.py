"""Trait data (combiners, einsum specs, dims, dimension maps) and the SBP candidates derived from it. Every
candidate is checked by simulating two ranks: inputs are laid out by the signature, the op runs on each
rank's piece, and the pieces, combined by the output SBP, must equal the op on the whole tensors."""
import re

import numpy as np
import pytest

import oneflow as flow

ops = flow._C.ops
RANKS = 2


def meta(t):
    return flow.empty(*t.shape, dtype=t.dtype, device="meta")


def parse(sig):
    ins, outs = sig.split(" -> ")
    return [s.strip() for s in ins.split(",")] if ins else [], [s.strip() for s in outs.split(",")]


def lay_out(t, sbp, rng):
    """The RANKS local pieces of the global tensor t under sbp."""
    if sbp == "B":
        return [t.clone() for _ in range(RANKS)]
    m = re.fullmatch(r"S\((\d+)\)", sbp)
    if m:
        return [c.clone() for c in flow.chunk(t, RANKS, int(m.group(1)))]
    kind = re.fullmatch(r"P\((\w+)\)", sbp).group(1)
    if t.dtype == flow.bool:
        other = flow.zeros_like(t) if kind == "any" else flow.ones_like(t)
        return [t.clone(), other]
    r = flow.tensor(rng.uniform(0.5, 1.5, tuple(t.shape)).astype(np.float32)).to(t.dtype)
    if kind == "sum":
        return [t - r, r]
    if kind == "mean":
        return [t + r, t - r]
    if kind == "max":
        return [t.clone(), t - r]
    if kind == "min":
        return [t.clone(), t + r]
    if kind == "prod":
        return [t / r, r]
    raise AssertionError(sbp)


def combine(pieces, sbp):
    if sbp == "B":
        for p in pieces[1:]:
            np.testing.assert_allclose(p.numpy(), pieces[0].numpy(), rtol=1e-5, atol=1e-5)
        return pieces[0]
    m = re.fullmatch(r"S\((\d+)\)", sbp)
    if m:
        return flow.cat(pieces, int(m.group(1)))
    kind = re.fullmatch(r"P\((\w+)\)", sbp).group(1)
    stacked = flow.stack(pieces)
    return {"sum": lambda: stacked.sum(0), "mean": lambda: stacked.mean(0), "max": lambda: stacked.amax(0),
            "min": lambda: stacked.amin(0), "prod": lambda: stacked.prod(0), "any": lambda: stacked.any(0),
            "all": lambda: stacked.all(0)}[kind]()


def as_list(r):
    return list(r) if isinstance(r, (list, tuple)) else [r]


def local_attrs(name, attrs, out_sbp):
    """Shape-valued attributes name global sizes; on a rank they are the local ones."""
    m = re.fullmatch(r"S\((\d+)\)", out_sbp)
    if name in ("reshape", "view", "expand") and m:
        key = "shape" if name == "reshape" else "size"
        local = list(attrs[key])
        local[int(m.group(1))] //= RANKS
        return {**attrs, key: local}
    return attrs


def rand(*shape, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed + len(shape))
    return flow.tensor(rng.uniform(-1, 1, shape).astype(dtype))


CASES = [
    ("add", [rand(4, 1, 6), rand(2, 6)], {}),
    ("mul", [rand(4, 6), rand(6)], {}),
    ("relu", [rand(4, 6)], {}),
    ("sum", [rand(4, 6, 2)], {"dim": [1]}),
    ("sum", [rand(4, 6)], {"dim": [0, 1], "keepdim": True}),
    ("mean", [rand(4, 6)], {"dim": [1]}),
    ("amax", [rand(4, 6)], {"dim": [0]}),
    ("prod", [rand(4, 6)], {"dim": 1}),
    ("any", [rand(4, 6) > 0.5], {"dim": [1]}),
    ("all", [rand(4, 6) > -0.5], {"dim": [0]}),
    ("max_dim", [rand(4, 6)], {"dim": 1}),
    ("cumsum", [rand(4, 6)], {"dim": 1}),
    ("mm", [rand(4, 6), rand(6, 2)], {}),
    ("bmm", [rand(2, 4, 6), rand(2, 6, 4)], {}),
    ("_batch_matmul", [rand(2, 4, 6, 2), rand(2, 4, 2, 4)], {}),  # "..." batch dims: each splits through
    ("addmm", [rand(2), rand(4, 6), rand(6, 2)], {}),
    ("mv", [rand(4, 6), rand(6)], {}),
    ("dot", [rand(6), rand(6)], {}),
    ("outer", [rand(4), rand(2)], {}),
    ("transpose", [rand(4, 6)], {"dim0": 0, "dim1": 1}),
    ("permute", [rand(2, 4, 6)], {"dims": [2, 0, 1]}),
    ("unsqueeze", [rand(4, 6)], {"dim": 1}),
    ("reshape", [rand(4, 6, 2)], {"shape": [24, 2]}),
    ("reshape", [rand(4, 6)], {"shape": [2, 2, 6]}),
    ("expand", [rand(4, 1)], {"size": [2, 4, 6]}),
    ("select", [rand(4, 6)], {"dim": 1, "index": 2}),
    ("softmax", [rand(4, 6)], {"dim": 1}),
    ("cat", [rand(4, 6), rand(4, 2)], {"dim": 1}),
    ("flip", [rand(4, 6)], {"dims": [0]}),
    ("sort", [rand(4, 6)], {"dim": 1}),
]


@pytest.mark.parametrize("name, inputs, attrs", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_every_candidate_computes_the_global_result(name, inputs, attrs):
    op = getattr(ops, name)
    sigs = op.sbp_signatures([meta(t) for t in inputs], attrs)
    assert sigs[-1].startswith("B") and "S(" in " ".join(sigs), sigs  # all-broadcast plus at least one split
    expected = as_list(op.redispatch(inputs, attrs))
    rng = np.random.default_rng(1)
    for sig in sigs:
        in_sbp, out_sbp = parse(sig)
        pieces = [lay_out(t, s, rng) for t, s in zip(inputs, in_sbp)]
        local = [as_list(op.redispatch([p[r] for p in pieces], local_attrs(name, attrs, out_sbp[0])))
                 for r in range(RANKS)]
        for k, (want, s) in enumerate(zip(expected, out_sbp)):
            got = combine([local[r][k] for r in range(RANKS)], s)
            np.testing.assert_allclose(got.float().numpy(), want.float().numpy(), rtol=1e-4, atol=1e-5,
                                       err_msg=f"{name} {sig}")


def test_trait_data_is_exposed():
    assert ops.sum.combiner == "sum" and ops.amax.combiner == "max" and ops.prod.combiner == "prod"
    assert ops.any.combiner == "any" and ops.logsumexp.combiner is None and ops.relu.combiner is None
    assert ops.mm.einsum == "ij,jk->ik" and ops.addmm.einsum == "+ik,ij,jk->ik" and ops.relu.einsum is None
    assert ops._batch_matmul.einsum == "...ij,...jk->...ik"
    heads = [flow.empty(2, 4, 6, 3, device="meta"), flow.empty(2, 4, 3, 5, device="meta")]
    sigs = ops._batch_matmul.sbp_signatures(heads)
    assert {"S(0), S(0) -> S(0)", "S(1), S(1) -> S(1)", "S(2), B -> S(2)", "B, S(3) -> S(3)",
            "S(3), S(2) -> P(sum)"} <= set(sigs), sigs
    assert "scan" in ops.cumsum.traits and "reduction" not in ops.cumsum.traits
    x = flow.empty(2, 3, 4, device="meta")
    assert ops.sum.dims([x], {"dim": [-1, 0]}) == [2, 0] and ops.sum.dims([x]) == [0, 1, 2]
    assert ops.softmax.dims([x], {"dim": -2}) == [1] and ops.relu.dims([x]) is None
    assert ops.transpose.dim_map([x], {"dim0": 0, "dim1": 2}) == [(2, 0), (1, 1), (0, 2)]
    assert ops.reshape.dim_map([x], {"shape": [6, 4]}) == [(0, 0), (2, 1)]
    assert ops.reshape.dim_map([x], {"shape": [2, -1]}) == [(0, 0), (1, 1)]
    assert ops.squeeze.dim_map([flow.empty(2, 1, 3, device="meta")], {}) == [(0, 0), (2, 1)]
    assert ops.add.dim_map([x, x]) is None


def test_candidates_from_traits_not_names():
    x = flow.empty(4, 6, device="meta")
    # no trait data: only all-broadcast
    assert ops.nonzero.sbp_signatures([x]) == ["B -> B"]
    # a view is linear: partial sums pass through
    assert "P(sum) -> P(sum)" in ops.transpose.sbp_signatures([x], {"dim0": 0, "dim1": 1})
    # a broadcast dim cannot be split on the input that broadcasts
    assert ops.add.sbp_signatures([x, flow.empty(6, device="meta")])[:2] == ["S(0), B -> S(0)", "S(1), S(0) -> S(1)"]
    # in-place variants use their op's rule
    assert ops.add_.sbp_signatures([x, x]) == ops.add.sbp_signatures([x, x])
