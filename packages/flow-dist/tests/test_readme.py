"""The README's flow-dist example (the ```py block that starts with ``# train_ddp.py``) runs under
``flowrun --nproc 2`` and ends with the same weights on both ranks."""
import re
from pathlib import Path

from helpers import run

README = Path(__file__).resolve().parents[3] / "README.md"


def test_readme_ddp_example_runs_on_two_ranks(tmp_path):
    blocks = re.findall(r"^```py\n(# train_ddp\.py\n.*?)^```", README.read_text(encoding="utf-8"), flags=re.M | re.S)
    assert len(blocks) == 1
    script = tmp_path / "train_ddp.py"
    script.write_text(blocks[0])
    rc, out, err, _ = run(["--nproc", 2, script])
    assert rc == 0, err
    lines = sorted(line.split() for line in out.splitlines() if line.strip())
    assert [rank for rank, _ in lines] == ["0", "1"] and lines[0][1] == lines[1][1]


def test_readme_global_tensor_example_runs_on_two_ranks(tmp_path):
    blocks = re.findall(r"^```py\n(# global_tensors\.py\n.*?)^```", README.read_text(encoding="utf-8"),
                        flags=re.M | re.S)
    assert len(blocks) == 1
    script = tmp_path / "global_tensors.py"
    script.write_text(blocks[0])
    rc, out, err, _ = run(["--nproc", 2, script])
    assert rc == 0, err
    lines = sorted(line.split(" ", 1) for line in out.splitlines() if line.strip())
    assert [rank for rank, _ in lines] == ["0", "1"] and lines[0][1] == lines[1][1]
    assert lines[0][1].startswith("(4, 4) (oneflow.sbp.broadcast,) {'all_reduce': 1} "), lines
