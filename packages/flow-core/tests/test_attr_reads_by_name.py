"""Kernels, meta functions and backward formulas read op attributes by their schema name (``a.f("alpha")``),
never by position (``a.f(0)``): a schema edit (a new attribute, a reordering) must not make a kernel read another
attribute's value. The compiler refuses integer arguments to the accessors; this scan also catches the forms it
cannot see (a literal index into ``values``, an index handed to a helper)."""
import pathlib
import re

CSRC = pathlib.Path(__file__).resolve().parents[1] / "csrc"

ACCESSORS = "i|f|b|s|ints|floats|dtype|str|none|opt_i|opt_f|opt_dtype|device|at"
# `a`, `attrs`, `at`, `c.attrs`, `fwd_attrs`, ... : the names Attrs objects go by in the core
ATTRS = r"\b(?:\w+\.)?(?:a|at|attrs|\w+_attrs)"
POSITIONAL = [
    re.compile(rf"{ATTRS}\.(?:{ACCESSORS})\(\s*[0-9]"),  # a.f(0), attrs.ints(1 + k)
    re.compile(rf"{ATTRS}\.values\[\s*[0-9]"),  # attrs.values[0]
    re.compile(rf"{ATTRS}\.(?:{ACCESSORS})\(\s*\w+\s*[+-]\s*[0-9]"),  # a.ints(k + 1)
]
# The schema walkers: they read attributes by the position the schema gives them.
WALKERS = {"ops/registry.cpp", "ops/registry.h", "python/ops_bind.cpp", "python/dispatch_bind.cpp"}


def positional_reads():
    found = []
    for path in sorted(CSRC.rglob("*")):
        if path.suffix not in (".cpp", ".h") or "kernels" in path.relative_to(CSRC).parts:
            continue
        rel = path.relative_to(CSRC).as_posix()
        if rel in WALKERS:
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("//", 1)[0]
            if any(p.search(code) for p in POSITIONAL):
                found.append(f"csrc/{rel}:{n}: {line.strip()}")
    return found


def test_the_scan_sees_the_sources_and_the_forms_it_refuses():
    assert (CSRC / "ops" / "registry.h").is_file() and len(list(CSRC.rglob("ops/*.cpp"))) > 20
    for bad in ['a.f(0)', 'c.attrs.ints(1)', 'attrs.values[0]', 'a.ints(ks + 1)', 'fwd_attrs.none(2)']:
        assert any(p.search(bad) for p in POSITIONAL), bad
    for good in ['a.f("alpha")', 'c.attrs.ints("dim")', 'in[0].size(0)', 'lab.at(1)', 'x.dtype()']:
        assert not any(p.search(good) for p in POSITIONAL), good


def test_no_kernel_reads_an_attribute_by_position():
    found = positional_reads()
    assert not found, "attributes read by position (read them by schema name):\n" + "\n".join(found)


def test_the_int_accessors_stay_deleted():
    header = (CSRC / "ops" / "registry.h").read_text()
    for acc in ACCESSORS.split("|"):
        assert re.search(rf"\b{acc}\(int\) const = delete;", header), acc
