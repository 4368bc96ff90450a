"""IR -> IR passes. Each lives in its own module and rewrites a :class:`~oneflow_graph.ir.GraphIR` in place,
returning a dict of statistics; :func:`run_default` runs the default pipeline and collects them."""
from .add_to_output import fuse_add_to_output
from .algebraic import algebraic_simplification
from .const_fold import constant_folding
from .copy_elision import copy_elision
from .cse import common_subexpression_elimination
from .dce import dead_code_elimination
from .early_updates import split_optimizer_updates
from .fold_conv_bn import fold_conv_bn
from .fuse_elementwise import fuse_elementwise
from .fuse_softmax_ce import fuse_softmax_cross_entropy
from .hoist_variables import hoist_variables
from .prepack_conv import prepack_conv_weights
from .recompute import checkpoint_recompute
from .straighten import straighten_memory_first

DEFAULT = (
    ("constant_folding", constant_folding),
    ("algebraic", algebraic_simplification),
    ("checkpoint_recompute", checkpoint_recompute),
    ("cse", common_subexpression_elimination),
    ("dce", dead_code_elimination),
    ("copy_elision", copy_elision),
    ("fold_conv_bn", fold_conv_bn),
    ("prepack_conv_weights", prepack_conv_weights),
    ("fuse_softmax_cross_entropy", fuse_softmax_cross_entropy),
    ("fuse_elementwise", fuse_elementwise),
)

# Passes off by default (OneFlow's defaults), each turned on by its graph.config switch; they run in the default
# pipeline's order, right after the pass named here.
OPTIONAL = (
    ("fuse_add_to_output", fuse_add_to_output, "fuse_softmax_cross_entropy"),  # config.allow_fuse_add_to_output
    # config.enable_straighten_algorithm("MemoryFirst"); after the updates moved into the backward, before hoisting
    ("straighten_memory_first", straighten_memory_first, "split_optimizer_updates"),
)

# Passes nn.Graph runs after the default ones and activation checkpointing: moving optimizer updates into the
# backward and hoisting nodes out of the plan into its cached prologue change the node order the passes above
# (activation checkpointing's backward regions, flow.compile's forward/backward split) read.
LATE = (
    ("split_optimizer_updates", split_optimizer_updates),
    ("hoist_variables", hoist_variables),
)


def run_default(ir, passes=DEFAULT):
    """Runs ``passes`` (``(name, fn)`` pairs) over ``ir``; returns ``[(name, stats)]`` in order."""
    report = []
    for name, fn in passes:
        report.append((name, fn(ir)))
    return report


__all__ = ["algebraic_simplification", "checkpoint_recompute", "constant_folding", "copy_elision",
           "common_subexpression_elimination", "dead_code_elimination", "fold_conv_bn", "fuse_add_to_output",
           "fuse_elementwise", "fuse_softmax_cross_entropy", "hoist_variables", "prepack_conv_weights", "run_default",
           "split_optimizer_updates", "straighten_memory_first", "DEFAULT", "LATE", "OPTIONAL"]
