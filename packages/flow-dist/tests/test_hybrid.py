"""Hybrid parallelism in eager global mode: one GPT (examples/gpt_hybrid/model.py) made data, tensor or
data x tensor parallel (a 2 x 2 mesh) by placements and SBPs only trains like a single process (ranks/
gpt_hybrid.py), and the example's train script agrees with its single-process run."""
import pytest

from helpers import run_ranks


@pytest.mark.parametrize("nproc,layout,tie", [(2, "dp", ""), (2, "tp", ""), (2, "tp", "tie"), (4, "dpxtp", ""),
                                              (4, "dpxtp", "tie"), (4, "tp", "")])
def test_gpt_layouts_train_20_steps_like_single_process(nproc, layout, tie):
    out = run_ranks(nproc, "gpt_hybrid.py", layout, *([tie] if tie else []), timeout=300)
    assert out.count(f"gpt hybrid {layout} ok") == nproc
