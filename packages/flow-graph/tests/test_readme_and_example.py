"""The repository README's graph example (its ```py blocks that use flow.nn.Graph) and examples/graph_train.py run as written."""
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def _run(args, tmp_path):
    env = dict(os.environ, OMP_NUM_THREADS="2")
    return subprocess.run([sys.executable, *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)


def test_readme_graph_blocks_run(tmp_path):
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        # the graph example's blocks only: other packages' README examples (flow-dist's run under flowrun) are
        # py blocks too
        blocks = [b for b in re.findall(r"^```py\n(.*?)^```", f.read(), flags=re.M | re.S) if "flow.nn.Graph" in b]
    assert blocks
    for block in blocks:
        proc = _run(["-c", block], tmp_path)
        assert proc.returncode == 0, f"{block}\n{proc.stderr[-3000:]}"
        assert proc.stdout.splitlines()[0].endswith(" True") and "compiled:" in proc.stdout


def test_graph_training_example_learns(tmp_path):
    proc = _run([os.path.join(ROOT, "examples", "graph_train.py"), "--steps", "40"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    accuracy = float(proc.stdout.strip().splitlines()[-1].split()[-1])
    assert accuracy > 0.6, proc.stdout  # four classes: chance is 0.25
