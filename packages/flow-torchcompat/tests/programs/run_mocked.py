"""Runs a program (path, then its arguments) with oneflow.mock_torch enabled, as `python run_mocked.py prog.py`."""
import runpy
import sys

import oneflow.mock_torch as mock

mock.enable()
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
