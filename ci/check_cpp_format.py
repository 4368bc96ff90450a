#!/usr/bin/env python3
"""Fails when a C++ file of the project differs from what .clang-format makes of it (the lint env runs this).

    python ci/check_cpp_format.py          # check
    python ci/check_cpp_format.py --fix    # rewrite the files in place
"""
import glob
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATTERNS = ["packages/*/csrc/**/*.cpp", "packages/*/csrc/**/*.h", "packages/*/csrc/**/*.cu",
            "examples/**/csrc/**/*.cpp", "examples/**/csrc/**/*.h"]


def main():
    files = sorted({f for p in PATTERNS for f in glob.glob(os.path.join(ROOT, p), recursive=True)})
    if not files:
        sys.exit("check_cpp_format: no C++ files found")
    args = ["-i"] if "--fix" in sys.argv else ["--dry-run", "-Werror"]
    r = subprocess.run(["clang-format", *args, *files])
    if r.returncode:
        sys.exit("C++ formatting differs from .clang-format: run `python ci/check_cpp_format.py --fix`")
    print(f"check_cpp_format: {len(files)} files formatted as .clang-format says")


if __name__ == "__main__":
    main()
