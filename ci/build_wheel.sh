#!/usr/bin/env bash
# Builds the flow-core wheel once into dist/; every test environment installs this one wheel.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$FLOW_ROOT"
rm -f dist/flow_core-*.whl
start=$(date +%s)
# The build's progress is shown as ninja's [n/N] lines (a cold build compiles ~100 files: minutes on 2 cores);
# everything else pip and CMake print goes to build/wheel.log.
mkdir -p build
echo "building flow-core (log: build/wheel.log)"
CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" \
  "$FLOW_PY" -m pip wheel -v --no-build-isolation --no-deps -w dist packages/flow-core 2>&1 \
  | tee build/wheel.log | grep --line-buffered -E '^\s*\[[0-9]+/[0-9]+\] (Building|Linking)|error:' || true
ls dist/flow_core-*.whl >/dev/null 2>&1 || { echo "flow-core build failed; the end of build/wheel.log:"; tail -40 build/wheel.log; exit 1; }
echo "flow-core wheel built in $(( $(date +%s) - start ))s: $(ls dist/flow_core-*.whl)"
