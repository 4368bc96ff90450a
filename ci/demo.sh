#!/usr/bin/env bash
# The main job: set up, build flow-core into the project venv and run the demo.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
bash "$FLOW_ROOT/ci/build_wheel.sh"
"$FLOW_PY" -m pip install -q --force-reinstall --no-deps "$(ls "$FLOW_ROOT"/dist/flow_core-*.whl | head -n 1)"
cd "$FLOW_ROOT"
"$FLOW_PY" examples/demo.py "$@"
