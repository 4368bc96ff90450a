"""The package's module-level import graph has no cycles: leaf modules import ``_C`` or their siblings, and the
modules written against the whole ``oneflow`` namespace (optim, distributions) are imported on first use, so no
module runs while one it needs is half-initialised. The graph comes from the sources, through the project's
own analysis (dev/import_cycles.py); imports inside functions run later and are not edges."""
import importlib.util
import os
import subprocess
import sys

import oneflow

ROOT = os.path.dirname(os.path.abspath(oneflow.__file__))
SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "..", "dev", "import_cycles.py")


def _analysis():
    spec = importlib.util.spec_from_file_location("import_cycles", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_no_import_cycles():
    a = _analysis()
    cycles = [c for c in a.strongly_connected(a.build_graph(ROOT)) if len(c) > 1]
    assert cycles == [], "import cycles: " + "; ".join(" <-> ".join(c[:6]) for c in cycles)


def test_the_analysis_sees_a_cycle_and_an_extension_module(tmp_path):
    # a two-module cycle is found; a parent package importing its child, and _C, are not cycles
    pkg = tmp_path / "oneflow"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from . import a, c\n")
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text("from .a import x\n")
    (pkg / "c.py").write_text("from . import _C\n")
    (pkg / "_C.cpython-311-x86_64-linux-gnu.so").write_bytes(b"")
    a = _analysis()
    cycles = [c for c in a.strongly_connected(a.build_graph(str(pkg))) if len(c) > 1]
    assert cycles == [["oneflow.a", "oneflow.b"]]


def test_lazy_submodules_import_on_first_use():
    code = ("import sys, oneflow as flow; assert 'oneflow.optim' not in sys.modules; "
            "assert flow.optim.SGD.__module__.startswith('oneflow.optim'); "
            "from oneflow.distributions import Normal; print(flow.distributions.Normal is Normal)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "True"
