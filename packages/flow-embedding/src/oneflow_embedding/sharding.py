"""Rank placement of ids. Multi-rank exchange (all_to_all through flow-dist) is not implemented yet: on more
than one rank the embedding raises NotImplementedError rather than silently giving rank-local tables."""
import oneflow as flow


def rank_and_world():
    """(rank, world_size) from flow-dist when it is installed and started, else (0, 1)."""
    try:
        env = flow.env
        world = env.get_world_size()
        return env.get_rank(), world
    except (AttributeError, ImportError, RuntimeError):
        return 0, 1


def _unsupported(*_):
    raise NotImplementedError("OneEmbedding sharding over several ranks is not implemented yet")


lookup = route_gradients = _unsupported
