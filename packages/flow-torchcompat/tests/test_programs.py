"""Acceptance: programs written for PyTorch (tests/programs/, in the manner of PyTorch's examples, minGPT and
nanoGPT) run to the end under oneflow.mock_torch and reach what they reach under real PyTorch. Both frameworks
seed their own random streams, so the initial weights and dropout masks differ: the programs train to a floor
(the data's entropy, or a separable task's near-zero loss), and the runs are compared at that floor."""
import json
import os
import signal
import subprocess
import sys

import pytest

PROGRAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs")
TIMEOUT = 900


def run(mocked, program, *args):
    runner = [os.path.join(PROGRAMS, "run_mocked.py")] if mocked else []
    cmd = [sys.executable, *runner, os.path.join(PROGRAMS, program), *args]
    # a process group of its own, killed whole on timeout (DataLoader workers included)
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))  # small programs, busy CI
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"{program} {args} (mocked={mocked}) ran past {TIMEOUT} s")
    assert proc.returncode == 0, f"{program} (mocked={mocked}) failed:\n{err[-4000:]}"
    return json.loads(out.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def results():
    cache = {}

    def get(program, *args):
        key = (program, args)
        if key not in cache:
            cache[key] = (run(False, program, *args), run(True, program, *args))
        return cache[key]

    return get


def test_regression(results):
    torch_r, ours = results("regression.py")
    assert ours["loss"] < 0.05 and torch_r["loss"] < 0.05
    for a, b in zip(ours["weights"] + [ours["bias"]], torch_r["weights"] + [torch_r["bias"]]):
        assert abs(a - b) < 0.1  # both found the target polynomial


def test_mnist_cnn_with_dataloader_workers_and_save_load(results):
    torch_r, ours = results("mnist_cnn.py", "2")
    assert ours["accuracy"] >= 0.97 and torch_r["accuracy"] >= 0.97
    assert abs(ours["accuracy"] - torch_r["accuracy"]) <= 0.03
    assert ours["loss"] < 0.15 and torch_r["loss"] < 0.15
    assert ours["reloaded_loss"] == pytest.approx(ours["loss"], rel=1e-6)  # torch.save/torch.load round trip


@pytest.mark.parametrize("kind", ["LSTM", "Transformer"])
def test_word_language_model(results, kind):
    torch_r, ours = results("word_lm.py", kind)
    assert abs(ours["first_loss"] - torch_r["first_loss"]) < 0.3  # both start near log(12)
    # the corpus has log(2) = 0.69 nats per word once learnt
    assert ours["loss"] < 1.0 and torch_r["loss"] < 1.0
    assert abs(ours["loss"] - torch_r["loss"]) < 0.15


def test_gpt_trainer(results):
    torch_r, ours = results("tiny_gpt.py")
    assert abs(ours["first_loss"] - torch_r["first_loss"]) < 0.2  # both start near log(4)
    assert ours["loss"] < 0.05 and torch_r["loss"] < 0.05
    assert ours["copy_accuracy"] >= 0.95 and torch_r["copy_accuracy"] >= 0.95


def test_time_sequence_prediction_with_lbfgs(results):
    torch_r, ours = results("time_sequence.py")
    assert ours["future_shape"] == torch_r["future_shape"] == [3, 49]
    assert ours["loss"] < 0.01 and torch_r["loss"] < 0.01  # both fit the sine waves
