"""A global model's state dict saved in one layout (``save DIR``: tensor-parallel weights S(0)/S(1) after two
training steps) loads into a model of another layout and rank count (``load DIR``: every parameter S(0) on this
job's ranks, through load_state_dict's boxing copy_), whose forward then equals the single-process model loaded
from the same file."""
import os
import sys

import numpy as np

import oneflow as flow

mode, where = sys.argv[1], sys.argv[2]
p = flow.env.all_device_placement("cpu")
S, B = flow.sbp.split, flow.sbp.broadcast
path = os.path.join(where, "model.pt")


def mlp():
    flow.manual_seed(3)
    return flow.nn.Sequential(flow.nn.Linear(6, 8), flow.nn.ReLU(), flow.nn.Linear(8, 4))


x = flow.tensor(np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32))
m = mlp().to_global(p, B)
if mode == "save":
    layout = {"0.weight": S(0), "0.bias": S(0), "2.weight": S(1), "2.bias": B}  # column then row parallel
    for name, prm in list(m.named_parameters()):
        mod, _, attr = name.rpartition(".")
        setattr(m.get_submodule(mod), attr, flow.nn.Parameter(prm.detach().to_global(sbp=layout[name])))
    opt = flow.optim.SGD(m.parameters(), lr=0.1)
    for _ in range(2):
        opt.zero_grad()
        m(x.to_global(p, B)).square().mean().backward()
        opt.step()
    flow.save(m.state_dict(), path, global_dst_rank=0)
    out = m(x.to_global(p, B)).to_global(sbp=B).to_local()
    if flow.env.get_rank() == 0:
        flow.save(out.detach(), os.path.join(where, "out.pt"))
else:
    for name, prm in list(m.named_parameters()):
        mod, _, attr = name.rpartition(".")
        setattr(m.get_submodule(mod), attr, flow.nn.Parameter(prm.detach().to_global(sbp=S(0))))
    m.load_state_dict(flow.load(path, global_src_rank=0))
    assert all(q.sbp == (S(0),) for q in m.parameters())
    local = mlp()
    local.load_state_dict(flow.load(path))
    got = m(x.to_global(p, B)).to_global(sbp=B).to_local().detach().numpy()
    np.testing.assert_allclose(got, local(x).detach().numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got, flow.load(os.path.join(where, "out.pt")).numpy(), rtol=1e-6, atol=1e-6)
print(f"rank {flow.env.get_rank()}: checkpoint module {mode} ok", flush=True)
