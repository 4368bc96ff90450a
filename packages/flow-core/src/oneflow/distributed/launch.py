"""``python -m oneflow.distributed.launch`` without flow-dist, which provides the launcher: a one-line error
naming the package (exit status 1); imported, an ImportError saying the same."""
from .. import _plugins

if __name__ == "__main__":
    raise SystemExit(str(_plugins.missing("distributed.launch")))
raise _plugins.missing("distributed.launch", import_=True)
