#!/usr/bin/env bash
# Builds the flow-core wheel once into dist/; every test environment installs this one wheel.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$FLOW_ROOT"
rm -f dist/flow_core-*.whl
start=$(date +%s)
CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" \
  "$FLOW_PY" -m pip wheel -q --no-build-isolation --no-deps -w dist packages/flow-core
echo "flow-core wheel built in $(( $(date +%s) - start ))s: $(ls dist/flow_core-*.whl)"
