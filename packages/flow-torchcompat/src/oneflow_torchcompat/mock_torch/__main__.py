"""``eval $(python3 -m oneflow.mock_torch [enable] [--lazy] [--verbose])`` / ``eval $(python3 -m
oneflow.mock_torch disable)``: print the shell commands that turn the mock on (or off) for the Pythons started
from this shell afterwards. Enabling puts a directory with a ``torch`` package that enables the mock first on
PYTHONPATH; disabling takes it off again."""
import argparse
import os
import shlex
import sys

SHIM_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_shim")


def _pythonpath_without_shim():
    return [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and os.path.abspath(p) != SHIM_DIR]


def commands(action, lazy=False, verbose=False):
    """The shell commands (one string) that ``eval`` runs for ``action`` ("enable" or "disable")."""
    rest = _pythonpath_without_shim()
    if action == "enable":
        path = os.pathsep.join([SHIM_DIR, *rest])
        return "; ".join([f"export PYTHONPATH={shlex.quote(path)}",
                          f"export ONEFLOW_MOCK_TORCH_LAZY={int(lazy)}",
                          f"export ONEFLOW_MOCK_TORCH_VERBOSE={int(verbose)}"])
    unset_path = f"export PYTHONPATH={shlex.quote(os.pathsep.join(rest))}" if rest else "unset PYTHONPATH"
    return "; ".join([unset_path, "unset ONEFLOW_MOCK_TORCH_LAZY", "unset ONEFLOW_MOCK_TORCH_VERBOSE"])


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m oneflow.mock_torch",
                                 description="Print shell commands that make `import torch` give oneflow "
                                             "(use as: eval $(python3 -m oneflow.mock_torch)).")
    ap.add_argument("action", nargs="?", choices=["enable", "disable"], default="enable")
    ap.add_argument("--lazy", action="store_true", help="names oneflow lacks become placeholders")
    ap.add_argument("--verbose", action="store_true", help="report torch names oneflow lacks on stderr")
    args = ap.parse_args(argv)
    print(commands(args.action, args.lazy, args.verbose))
    return 0


if __name__ == "__main__":
    sys.exit(main())
