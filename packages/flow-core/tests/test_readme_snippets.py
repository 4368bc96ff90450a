"""The README's Python code blocks run as written (each in a fresh interpreter, in an empty directory), and the
files it links to exist: a snippet or a link that goes stale fails here."""
import os
import re
import subprocess
import sys

import pytest

import oneflow as flow

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
README = os.path.join(ROOT, "README.md")


def _read():
    with open(README, encoding="utf-8") as f:
        return f.read()


def _python_blocks():
    return re.findall(r"^```python\n(.*?)^```", _read(), flags=re.M | re.S)


BLOCKS = _python_blocks()


def test_readme_has_its_python_blocks():
    assert len(BLOCKS) >= 2, "the tour and the training example"


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_python_block_runs(index, tmp_path):
    env = dict(os.environ, OMP_NUM_THREADS="2",
               PYTHONPATH=os.pathsep.join(p for p in [os.path.dirname(os.path.dirname(flow.__file__)),
                                                      os.environ.get("PYTHONPATH", "")] if p))
    proc = subprocess.run([sys.executable, "-c", BLOCKS[index]], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, f"README python block {index + 1} failed:\n{BLOCKS[index]}\n{proc.stderr[-3000:]}"


def test_relative_links_point_at_files():
    targets = re.findall(r"\]\(([^)#\s]+)\)", _read())
    local = [t for t in targets if "://" not in t]
    assert local, "the README links to docs and examples"
    missing = [t for t in local if not os.path.exists(os.path.join(ROOT, t))]
    assert not missing, missing
