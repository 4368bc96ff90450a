#!/usr/bin/env bash
# Builds the flow-core wheel once into dist/; every test environment installs this one wheel. The wheel is
# the portable build (x86-64-v2 with run-time AVX2 dispatch: packages/flow-core/CMakeLists.txt); after the
# build ci/check_wheel.py inspects it (RPATHs, needed libraries, symbol versions, metadata, stray AVX code)
# and retags it to the oldest manylinux tag it qualifies for.
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
wheel="$("$FLOW_PY" ci/check_wheel.py --check-isa --retag auto "$(ls dist/flow_core-*.whl | head -n 1)")"
echo "flow-core wheel built and checked in $(( $(date +%s) - start ))s: $wheel"
