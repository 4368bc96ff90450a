"""Communicators of placements: all the ranks of a placement, or this rank's line of ranks along one hierarchy
dimension (for n-D sbp each dimension's collectives run among the ranks that differ only in that index). Made
once per rank list and cached by the world communicator; member order is the placement's, so a member's rank in
the communicator is its index along the dimension."""
import numpy as np

from . import _world


def communicator(placement, dim=None):
    """The communicator of this rank's group in ``placement``: all its ranks (``dim=None``) or those along
    hierarchy dimension ``dim``; None when this rank is not in the placement."""
    ranks = placement.ranks
    if dim is not None and not (isinstance(dim, int) and -ranks.ndim <= dim < ranks.ndim):
        raise IndexError(f"hierarchy dimension {dim!r} out of range for a placement of hierarchy "
                         f"{tuple(ranks.shape)}")
    found = np.argwhere(ranks == _world.rank())
    if found.size == 0:
        return None
    if dim is None:
        members = ranks.reshape(-1).tolist()
    else:
        index = list(found[0])
        index[dim] = slice(None)
        members = ranks[tuple(index)].tolist()
    return _world.world().sub(members)
