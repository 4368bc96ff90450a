"""flow-graph: static graphs for oneflow (``flow.nn.Graph``), OneFlow's API over a tracer, an SSA IR, passes
and a plan executor. See :class:`Graph`."""
from .errors import GraphTraceError
from .graph import Graph
from .ir import GraphIR
from .tracer import Proxy, trace

__all__ = ["Graph", "GraphIR", "GraphTraceError", "Proxy", "trace"]
