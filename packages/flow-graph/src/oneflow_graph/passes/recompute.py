"""Keeping ``flow.utils.checkpoint``'s recomputation: the ops a checkpointed region's backward recomputes (the
tracer records them while the core replays the region, see ``oneflow.utils.checkpoint.recomputing``) repeat the
forward's ops on the same values, so common-subexpression elimination would merge them back into the forward, and
the backward would read the forward's activations again: nothing saved. This pass, run before CSE, tags each
recomputed op with its region, and CSE merges only ops of the same region (or of none). The forward's activations
then die after their last forward use, and the backward reads the recomputed ones.

Turning the pass off (``config.enable_pass("checkpoint_recompute", False)``) lets CSE merge them: the graph then
keeps the activations and does not recompute (less compute, more memory).
"""


def checkpoint_recompute(ir):
    recorded = ir.__dict__.get("recomputed") or {}
    present = {id(n) for n in ir.nodes}
    tags = {}
    for region, nodes in recorded.items():
        for n in nodes:
            if id(n) in present:
                tags[id(n)] = region
    ir.__dict__["recompute_region"] = tags  # read by cse.py
    return {"regions": len(set(tags.values())), "recomputed_ops": len(tags)}


__all__ = ["checkpoint_recompute"]
