"""DPxTP training of the example's GPT on the 2 x 2 mesh in which rank 2 dies (os._exit(3)) at step 3, while
the other ranks wait for it in the step's collectives."""
import os
import sys
from pathlib import Path

import numpy as np

import oneflow as flow

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "examples" / "gpt_hybrid"))
import model as gpt  # noqa: E402

flow.manual_seed(0)
m = gpt.GPT(seq=8)
placement = gpt.lay_out(m, "dpxtp")
opt = flow.optim.Adam(m.parameters(), lr=1e-3)
rng = np.random.default_rng(0)
for step in range(1000):
    if step == 3 and flow.env.get_rank() == 2:
        os._exit(3)
    ids = rng.integers(0, 64, (4, 9))
    opt.zero_grad()
    m(gpt.to_batch(ids[:, :-1], "dpxtp", placement), gpt.to_batch(ids[:, 1:], "dpxtp", placement)).backward()
    opt.step()
    print(f"rank {flow.env.get_rank()} step {step}", flush=True)
