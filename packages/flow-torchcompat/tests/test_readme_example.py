"""The README's flow-torchcompat example (its bash block) runs as written and prints what it says."""
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def test_readme_example_runs(tmp_path):
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        section = f.read().split("## Running PyTorch programs (flow-torchcompat)", 1)[1]
    block = re.search(r"^```bash\n(.*?)^```", section, flags=re.M | re.S).group(1)
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")  # `python3` is this Python
    r = subprocess.run(["bash", "-e", "-c", block], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.split("\n")
    assert lines[0] == lines[1] == "2.13.0+oneflow oneflow._tensor True", r.stdout
