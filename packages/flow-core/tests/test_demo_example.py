"""examples/demo.py, the tour the main job (ci/demo.sh) runs first, runs through its own checks."""
import os
import subprocess
import sys

import oneflow as flow

DEMO = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "demo.py")


def test_demo_runs_and_converges():
    env = dict(os.environ, OMP_NUM_THREADS="2",
               PYTHONPATH=os.pathsep.join(p for p in [os.path.dirname(os.path.dirname(flow.__file__)),
                                                      os.environ.get("PYTHONPATH", "")] if p))
    proc = subprocess.run([sys.executable, DEMO], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"oneflow {flow.__version__}: ") and lines[0].endswith(" registered ops")
    assert "w=[1.0, -2.0, 3.0]" in proc.stdout and lines[-1] == "ok"
