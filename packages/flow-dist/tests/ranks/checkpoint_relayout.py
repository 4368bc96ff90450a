"""Global checkpoints (``flow.save(..., global_dst_rank=)`` / ``flow.load(..., global_src_rank=)``).

``save DIR``: every layout of two global tensors (S(0), S(1), B, partial_sum; on this job's ranks and, with 2+
ranks, on a sub-placement that leaves out the writing rank's peers) plus local values is saved once, gathered
onto rank 0; a save whose write fails raises on every rank; saving a global tensor without global_dst_rank
raises. ``load DIR``: in any rank count, loading with global_src_rank=0 gives broadcast global tensors equal to
the saved whole values, which copy_ lays out in another sbp."""
import os
import sys

import numpy as np

import oneflow as flow

mode, where = sys.argv[1], sys.argv[2]
r, n = flow.env.get_rank(), flow.env.get_world_size()
p = flow.env.all_device_placement("cpu")
S0, S1, B, P = flow.sbp.split(0), flow.sbp.split(1), flow.sbp.broadcast, flow.sbp.partial_sum
a = np.arange(35, dtype=np.float32).reshape(7, 5) / 7  # 7 rows: uneven splits on 2 and 4 ranks
b = np.linspace(-1, 1, 12).reshape(3, 4).astype(np.float64)
path = os.path.join(where, "ckpt.pt")

if mode == "save":
    state = {"s0": flow.tensor(a).to_global(p, B).to_global(sbp=S0),
             "s1": flow.tensor(a).to_global(p, B).to_global(sbp=S1),
             "b": flow.tensor(b).to_global(p, B),
             "nested": [flow.tensor(b).to_global(p, B).to_global(sbp=P), {"step": 7}],
             "local": flow.tensor([1, 2, 3]) * (r + 1)}
    if n > 1:
        sub = flow.placement("cpu", ranks=list(range(1, n)))  # rank 0 holds no part of it
        state["elsewhere"] = flow.tensor(a).to_global(sub, B).to_global(sbp=S0)
    flow.save(state, path, global_dst_rank=0)
    assert os.path.exists(path)
    try:
        flow.save({"x": state["s0"]}, os.path.join(where, "no_such_dir", "x.pt"), global_dst_rank=0)
        raise AssertionError("a failed write must raise on every rank")
    except RuntimeError as e:
        assert "rank 0" in str(e) or "does not exist" in str(e), e
    try:
        flow.save({"x": state["s0"]}, os.path.join(where, f"bad{r}.pt"))
        raise AssertionError("saving a global tensor without global_dst_rank must raise")
    except RuntimeError as e:
        assert "global_dst_rank" in str(e) and "obj['x']" in str(e), e
    try:
        flow.save(state, path, global_dst_rank=n)
        raise AssertionError("a rank outside the job must raise")
    except ValueError as e:
        assert "global_dst_rank" in str(e)
    print(f"rank {r}: checkpoint save ok", flush=True)
else:
    sd = flow.load(path, global_src_rank=0)
    assert sd["nested"][1] == {"step": 7}
    for key, want in (("s0", a), ("s1", a), ("b", b), ("elsewhere", a)):
        if key == "elsewhere" and key not in sd:
            continue
        t = sd[key]
        assert t.is_global and t.placement == p and t.sbp == (B,), (key, t.sbp)
        np.testing.assert_array_equal(t.to_local().numpy(), want, err_msg=key)
    np.testing.assert_array_equal(sd["nested"][0].to_local().numpy(), b)
    assert sd["local"].to_local().tolist() == [1, 2, 3]  # rank 0's local tensor, as saved
    # laid out again in another layout, as load_state_dict's copy_ does
    target = flow.zeros(7, 5, placement=p, sbp=S1)
    target.copy_(sd["s0"])
    np.testing.assert_array_equal(target.to_global(sbp=B).to_local().numpy(), a)
    try:
        flow.load(os.path.join(where, "missing.pt"), global_src_rank=0)
        raise AssertionError("a missing file on the source rank must raise on every rank")
    except FileNotFoundError:
        pass
    print(f"rank {r}: checkpoint load ok", flush=True)
