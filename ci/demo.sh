#!/usr/bin/env bash
# The main job: set up, build flow-core into the project venv, run the short tour of tensors and autograd, then
# train the documentation's MNIST network (examples/mnist/train.py) on the embedded digits, no network needed.
# Arguments go to the MNIST script, e.g. `bash ci/demo.sh --data ./data --epochs 10` for full MNIST.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
bash "$FLOW_ROOT/ci/build_wheel.sh"
"$FLOW_PY" -m pip install -q --force-reinstall --no-deps "$(ls "$FLOW_ROOT"/dist/flow_core-*.whl | head -n 1)"
"$FLOW_PY" -m pip install -q -r "$FLOW_ROOT/examples/mnist/requirements.txt"
cd "$FLOW_ROOT"
"$FLOW_PY" examples/demo.py
echo
echo "== MNIST: the documentation's SimpleCNN (examples/mnist/train.py) =="
"$FLOW_PY" examples/mnist/train.py "$@"
