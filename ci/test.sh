#!/usr/bin/env bash
# The whole test suite: build flow-core once, then run each package's tests in its own tox environment
# with that wheel installed.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
bash "$FLOW_ROOT/ci/build_wheel.sh"
"$FLOW_PY" -m pip install -q "tox>=4"
cd "$FLOW_ROOT"
export FLOW_CORE_WHEEL="$(ls "$FLOW_ROOT"/dist/flow_core-*.whl | head -n 1)"
export HYPOTHESIS_PROFILE="${HYPOTHESIS_PROFILE:-ci}"
"$VENV/bin/tox" run "$@"
