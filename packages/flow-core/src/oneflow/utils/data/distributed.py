"""``DistributedSampler``: each of ``num_replicas`` processes reads its own strided share of the dataset."""
import math

from .sampler import Sampler

__all__ = ["DistributedSampler"]


def _dist_world():
    """(world_size, rank) from the distributed plugin when it is installed, else from the launcher's env vars.

    Only a plugin that is not installed falls back to the env vars: one that is installed but fails (to load, or
    to answer) raises its own error rather than giving every rank the whole dataset."""
    import os

    import oneflow
    from ... import _plugins

    try:
        env = oneflow.env
    except _plugins.PluginNotInstalledError:
        env = None
    if env is not None:
        return env.get_world_size(), env.get_rank()
    if "WORLD_SIZE" in os.environ and "RANK" in os.environ:
        return int(os.environ["WORLD_SIZE"]), int(os.environ["RANK"])
    raise ValueError("Default process group has not been initialized, please make sure to call init_process_group.")


class DistributedSampler(Sampler):
    """Splits the (optionally shuffled, per ``seed + epoch``) indices across ``num_replicas`` ranks.

    Without ``drop_last`` the list is padded by repeating its start so every rank gets ``ceil(len / replicas)``
    indices; with it the tail is dropped instead. Call ``set_epoch(epoch)`` each epoch to reshuffle.
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        if num_replicas is None or rank is None:
            world, r = _dist_world()
            num_replicas = world if num_replicas is None else num_replicas
            rank = r if rank is None else rank
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        if self.drop_last and len(self.dataset) % self.num_replicas != 0:
            self.num_samples = math.ceil((len(self.dataset) - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(len(self.dataset) / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        if self.shuffle:
            from ... import _C
            from ..._ops.creation_random import randperm

            g = _C.Generator()
            g.manual_seed(self.seed + self.epoch)
            indices = randperm(len(self.dataset), generator=g).tolist()
        else:
            indices = list(range(len(self.dataset)))
        if not self.drop_last:
            pad = self.total_size - len(indices)
            if pad <= len(indices):
                indices += indices[:pad]
            else:
                indices += (indices * math.ceil(pad / len(indices)))[:pad]
        else:
            indices = indices[: self.total_size]
        assert len(indices) == self.total_size
        indices = indices[self.rank:self.total_size:self.num_replicas]
        assert len(indices) == self.num_samples
        return iter(indices)

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """Sets the epoch, which (with ``seed``) determines the shuffle order."""
        self.epoch = epoch
