"""Hybrid parallelism in eager global mode: one GPT (examples/gpt_hybrid/model.py) made data, tensor or
data x tensor parallel (a 2 x 2 mesh) by placements and SBPs only trains like a single process (ranks/
gpt_hybrid.py), and the example's train script agrees with its single-process run in every layout (also ZeRO-2,
pipeline stages and pipeline x data; eager and inside nn.Graph)."""
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers import RANKS, run, run_ranks


@pytest.mark.parametrize("nproc,layout,tie", [(2, "dp", ""), (2, "tp", ""), (2, "tp", "tie"), (4, "dpxtp", ""),
                                              (4, "dpxtp", "tie"), (4, "tp", "")])
def test_gpt_layouts_train_20_steps_like_single_process(nproc, layout, tie):
    out = run_ranks(nproc, "gpt_hybrid.py", layout, *([tie] if tie else []), timeout=300)
    assert out.count(f"gpt hybrid {layout} ok") == nproc


TRAIN = Path(__file__).resolve().parents[3] / "examples" / "gpt_hybrid" / "train.py"
STEPS = 5


def _losses(out, nproc):
    """{rank: [loss per step]} from the train script's output, after checking its closing line per rank."""
    losses = {r: [] for r in range(nproc)}
    for line in out.splitlines():
        m = re.fullmatch(r"rank (\d+) step (\d+) loss (\S+)", line)
        if m:
            r, step = int(m[1]), int(m[2])
            assert step == len(losses[r]), line
            losses[r].append(float(m[3]))
    for r in range(nproc):
        summary = re.search(rf"^rank {r} layout \w+ tokens/s ([\d.]+) peak_mem_mib ([\d.]+) tensor_peak_mib "
                            rf"([\d.]+) state_mib ([\d.]+)$", out, re.M)
        assert summary and float(summary[1]) > 0 and float(summary[2]) > 10 and float(summary[3]) > 0, out
    return losses


def _single(*extra):
    p = subprocess.run([sys.executable, str(TRAIN), "--layout", "single", "--steps", str(STEPS), *extra],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return _losses(p.stdout, 1)[0]


@pytest.fixture(scope="module")
def single_losses():
    return _single()


@pytest.mark.parametrize("nproc,layout,extra", [(2, "dp", ()), (2, "tp", ()), (4, "dpxtp", ()), (2, "zero2", ()),
                                                 (2, "pp", ()), (4, "ppxdp", ()), (2, "pp", ("--graph",)),
                                                 (2, "pp", ("--graph", "--schedule", "1f1b")),
                                                 (4, "ppxdp", ("--graph",)), (2, "dp", ("--graph",)),
                                                 (2, "tp", ("--graph",)), (2, "zero2", ("--graph",))])
def test_example_train_script_agrees_with_its_single_process_run(nproc, layout, extra, single_losses):
    assert len(single_losses) == STEPS
    rc, out, err, _ = run(["--nproc", nproc, TRAIN, "--layout", layout, "--steps", STEPS, *extra], timeout=240)
    assert rc == 0, err
    for r, got in _losses(out, nproc).items():
        np.testing.assert_allclose(got, single_losses, rtol=1e-5, err_msg=f"rank {r}")


@pytest.mark.parametrize("nproc,layout", [(2, "pp"), (4, "ppxdp")])
def test_a_head_tied_to_the_embedding_across_pipeline_stages_in_a_graph_trains_like_one_process(nproc, layout):
    # the head on the last stage reads the first stage's embedding weight; its gradient comes back to it
    want = _single("--tie")
    rc, out, err, _ = run(["--nproc", nproc, TRAIN, "--layout", layout, "--steps", STEPS, "--graph", "--tie"],
                          timeout=240)
    assert rc == 0, err
    for r, got in _losses(out, nproc).items():
        np.testing.assert_allclose(got, want, rtol=1e-5, err_msg=f"rank {r}")


def test_example_train_script_in_a_graph_on_one_process_agrees_with_eager(single_losses):
    p = subprocess.run([sys.executable, str(TRAIN), "--layout", "single", "--steps", str(STEPS), "--graph"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    np.testing.assert_allclose(_losses(p.stdout, 1)[0], single_losses, rtol=1e-5)


def test_a_rank_killed_mid_dpxtp_training_ends_the_job_with_its_exit_code():
    rc, out, err, secs = run(["--nproc", 4, RANKS / "gpt_hybrid_kill.py"], timeout=120)
    assert rc == 3, f"exit code {rc}\nstdout:\n{out}\nstderr:\n{err}"
    assert "rank 2 exited with code 3" in err, err
    assert "rank 2 step 2" in out and "rank 2 step 3" not in out, out
    assert secs < 60, secs  # the waiting ranks are stopped, not left to time out
