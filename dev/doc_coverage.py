#!/usr/bin/env python3
"""Counts the public callables of ``oneflow`` and the public Tensor methods that have no docstring, and lists
them (tests/test_docstring_coverage.py fails on any).

    PYTHONPATH=packages/flow-core/src python dev/doc_coverage.py [--list]
"""
import argparse
import inspect

import oneflow as flow


def _doc(obj):
    doc = obj.__dict__.get("__doc__") if isinstance(obj, type) else getattr(obj, "__doc__", None)
    return doc.strip() if isinstance(doc, str) else ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--list", action="store_true", help="print the names without a docstring")
    args = ap.parse_args()
    groups = {
        "oneflow": [(n, getattr(flow, n)) for n in dir(flow) if not n.startswith("_")],
        "Tensor": [(n, inspect.getattr_static(flow.Tensor, n)) for n in dir(flow.Tensor) if not n.startswith("_")],
    }
    for label, members in groups.items():
        callables = [(n, m) for n, m in members if callable(m)]
        missing = [n for n, m in callables if not _doc(m)]
        print(f"{label}: {len(missing)} of {len(callables)} callables without a docstring")
        if args.list and missing:
            print("  " + " ".join(missing))


if __name__ == "__main__":
    main()
