"""The repository README's flow-embedding example (its ```py block using flow.one_embedding) runs as written."""
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def test_readme_embedding_block_runs_and_learns(tmp_path):
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        blocks = [b for b in re.findall(r"^```py\n(.*?)^```", f.read(), flags=re.M | re.S) if "one_embedding" in b]
    assert len(blocks) == 1
    proc = subprocess.run([sys.executable, "-c", blocks[0]], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, OMP_NUM_THREADS="2"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    m = re.match(r"loss (\S+), rows (\d+), cache ", proc.stdout)
    assert m, proc.stdout
    assert float(m.group(1)) < 0.3 and int(m.group(2)) == 768, proc.stdout
