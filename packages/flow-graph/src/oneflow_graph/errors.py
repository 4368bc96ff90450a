"""Errors of graph tracing, naming the user's code that caused them."""
import os
import sys

import oneflow

_SKIP_DIRS = (os.path.dirname(os.path.abspath(oneflow.__file__)), os.path.dirname(os.path.abspath(__file__)))


def user_frame(depth=1):
    """The innermost frame outside oneflow and oneflow_graph (the user's code), or None."""
    f = sys._getframe(depth)
    while f is not None:
        path = os.path.abspath(f.f_code.co_filename)
        if not path.startswith(_SKIP_DIRS) and not f.f_code.co_filename.startswith("<frozen"):
            return f
        f = f.f_back
    return None


def user_location(depth=2):
    """``"file:line"`` of the user's code issuing the current call ("<unknown>" if none is found)."""
    f = user_frame(depth)
    return f"{f.f_code.co_filename}:{f.f_lineno}" if f is not None else "<unknown>"


class GraphTraceError(RuntimeError):
    """An operation that a traced graph cannot express: reading a tensor's value while ``build`` is traced (the
    values do not exist yet), a Python branch on one, or a traced tensor used outside its graph."""


def value_read_error(what, graph_name=None):
    where = user_location(3)
    graph = f"{graph_name}.build()" if graph_name else "nn.Graph.build()"
    return GraphTraceError(
        f"{what} on a tensor traced inside {graph} at {where}: while a graph is traced its tensors have shapes and "
        f"dtypes but no values, so Python code cannot read them (no .item(), .numpy(), .tolist(), print or "
        f"Python branch on a tensor inside build). Return the tensor from build() and read it from the result, "
        f"or express the branch with tensor ops (e.g. flow.where).")
