"""Prints the import cycles of the oneflow package: the strongly connected components of its module graph.

Edges come from the source (ast), not from importing it. By default only imports that run when a module is
loaded count (module level, also under ``if``/``try``/``with``); ``--local`` adds the ones inside functions.
``from pkg import name`` is an edge to ``pkg.name`` when that is a module, else to ``pkg`` itself; importing
``a.b.c`` also loads ``a`` and ``a.b``, which count unless the importer lives inside them (they are then
already loading). ``import oneflow`` from a module inside it does count: the module reads the package.

    python dev/import_cycles.py [--local] [--edges] [ROOT]
"""
import argparse
import ast
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_ROOT = os.path.join(HERE, "..", "packages", "flow-core", "src", "oneflow")


def find_modules(root, package):
    """{dotted name: (path or None for an extension module, is_package)}."""
    mods = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            rel = os.path.relpath(os.path.join(dirpath, f), root)
            if f.endswith(".py"):
                parts = rel[:-3].split(os.sep)
                is_pkg = parts[-1] == "__init__"
                if is_pkg:
                    parts = parts[:-1]
                mods[".".join([package, *parts])] = (os.path.join(dirpath, f), is_pkg)
            elif f.endswith(".so") and f.count(".") >= 2:  # a Python extension (name.<abi tag>.so)
                parts = rel.split(".")[0].split(os.sep)
                mods[".".join([package, *parts])] = (None, False)
    return mods


def import_nodes(tree, local):
    if local:
        return [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    found = []

    def visit(body):
        for node in body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                found.append(node)
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                for field in ("body", "orelse", "finalbody"):
                    visit(getattr(node, field, []))
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)

    visit(tree.body)
    return found


def build_graph(root, package="oneflow", local=False):
    mods = find_modules(root, package)

    def owner(name):  # the module a dotted name lives in
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    edges = {m: set() for m in mods}
    for mod, (path, is_pkg) in mods.items():
        if path is None:
            continue
        with open(path) as f:
            tree = ast.parse(f.read())
        base = mod if is_pkg else mod.rpartition(".")[0]
        for node in import_nodes(tree, local):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                source = node.module or ""
                if node.level:
                    parts = base.split(".")
                    source = ".".join(parts[: len(parts) - node.level + 1] + ([source] if source else []))
                targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in mods else source for a in node.names]
            for target in targets:
                target = owner(target) if target.split(".")[0] == package else None
                if target is None or target == mod:
                    continue
                edges[mod].add(target)
                parts = target.split(".")
                for i in range(1, len(parts)):
                    parent = ".".join(parts[:i])
                    if parent in mods and not (mod + ".").startswith(parent + "."):
                        edges[mod].add(parent)
    return edges


def strongly_connected(edges):
    """Tarjan's algorithm, iterative (the graph is deep enough to exhaust Python's recursion limit)."""
    index, low, on_stack, stack, comps = {}, {}, set(), [], []
    counter = 0
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    comps.append(sorted(comp))
    return comps


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("root", nargs="?", default=DEFAULT_ROOT)
    parser.add_argument("--local", action="store_true", help="count imports inside functions too")
    parser.add_argument("--edges", action="store_true", help="print every edge inside a cycle")
    args = parser.parse_args(argv)
    edges = build_graph(os.path.abspath(args.root), local=args.local)
    cycles = sorted((c for c in strongly_connected(edges) if len(c) > 1), key=len, reverse=True)
    print(f"{len(edges)} modules, {sum(map(len, edges.values()))} imports, {len(cycles)} cycles, "
          f"{sum(map(len, cycles))} modules in them")
    for comp in cycles:
        print(f"\n{len(comp)}: " + " ".join(comp))
        if args.edges:
            members = set(comp)
            for a in comp:
                for b in sorted(edges[a] & members):
                    print(f"    {a} -> {b}")
    return 1 if cycles else 0


if __name__ == "__main__":
    sys.exit(main())
