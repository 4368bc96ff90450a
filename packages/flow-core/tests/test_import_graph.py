"""The package's module-level import graph has no cycles: leaf modules import ``_C`` or their siblings, and the
modules written against the whole ``oneflow`` namespace (optim, distributions) are imported on first use, so no
module runs while one it needs is half-initialised. Checked statically over the sources (imports inside functions
run later and are not edges)."""
import ast
import os
import sys

import oneflow

ROOT = os.path.dirname(os.path.abspath(oneflow.__file__))


def _modules():
    mods = {}
    for dirpath, _, files in os.walk(ROOT):
        for f in files:
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(dirpath, f), ROOT)[:-3].split(os.sep)
                is_pkg = rel[-1] == "__init__"
                name = ".".join(["oneflow", *(rel[:-1] if is_pkg else rel)])
                mods[name] = (os.path.join(dirpath, f), is_pkg)
            elif f.endswith(".so") and not f.startswith("lib"):  # an extension module (_C): imports nothing here
                rel = os.path.relpath(os.path.join(dirpath, f.split(".")[0]), ROOT).split(os.sep)
                mods[".".join(["oneflow", *rel])] = (None, False)
    return mods


def _module_level_imports(tree):
    out = []

    def walk(stmts):
        for s in stmts:
            if isinstance(s, (ast.Import, ast.ImportFrom)):
                out.append(s)
            elif isinstance(s, (ast.If, ast.Try, ast.With)):
                for field in ("body", "orelse", "finalbody"):
                    walk(getattr(s, field, []))
                for h in getattr(s, "handlers", []):
                    walk(h.body)

    walk(tree.body)
    return out


def _edges(mods):
    def resolve(name):
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name

    edges = {m: set() for m in mods}
    for m, (path, is_pkg) in mods.items():
        if path is None:
            continue
        with open(path) as f:
            tree = ast.parse(f.read())
        base = m if is_pkg else m.rpartition(".")[0]
        for s in _module_level_imports(tree):
            if isinstance(s, ast.Import):
                targets = [a.name for a in s.names]
            else:
                mod = s.module or ""
                if s.level:
                    parts = base.split(".")
                    mod = ".".join(parts[:len(parts) - (s.level - 1)]) + ("." + mod if mod else "")
                targets = [mod + "." + a.name if mod + "." + a.name in mods else mod for a in s.names]
            for t in targets:
                r = resolve(t) if t.startswith("oneflow") else ""
                if not r or r == m:
                    continue
                edges[m].add(r)
                # importing a.b.c first runs a and a.b, unless the importer is inside them (then they are running)
                parts = r.split(".")
                for i in range(1, len(parts)):
                    p = ".".join(parts[:i])
                    if p in mods and not (m + ".").startswith(p + "."):
                        edges[m].add(p)
    return edges


def _cycles(edges):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 10000))
    try:
        for v in edges:
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(old)
    return out


def test_no_import_cycles():
    cycles = _cycles(_edges(_modules()))
    assert cycles == [], "import cycles: " + "; ".join(" <-> ".join(c[:6]) for c in cycles)


def test_the_checker_sees_a_cycle():
    # the analysis itself: a two-module cycle and a parent package importing its child are told apart
    edges = {"oneflow": {"oneflow.a"}, "oneflow.a": {"oneflow.b"}, "oneflow.b": {"oneflow.a"}, "oneflow.c": set()}
    assert _cycles(edges) == [["oneflow.a", "oneflow.b"]]


def test_lazy_submodules_import_on_first_use():
    import subprocess

    code = ("import sys, oneflow as flow; assert 'oneflow.optim' not in sys.modules; "
            "assert flow.optim.SGD.__module__.startswith('oneflow.optim'); "
            "from oneflow.distributions import Normal; print(flow.distributions.Normal is Normal)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "True"
