"""Seeding and RNG state of the default CPU generator (PyTorch's ``torch.random``).

Random ops draw from ``oneflow.default_generator`` unless given ``generator=``: a ``oneflow.Generator`` is a
Philox4x32-10 counter-based stream (a seed plus an offset), so results are reproducible for a seed and
independent of the number of threads.
"""
import contextlib

from . import _C

Generator = _C.Generator
default_generator = _C.default_generator

__all__ = ["manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "fork_rng", "Generator",
           "default_generator"]


def manual_seed(seed):
    """Seeds the default generator (and rewinds its stream); returns it."""
    return default_generator.manual_seed(seed)


def seed():
    """Seeds the default generator from a non-deterministic source; returns the seed."""
    return default_generator.seed()


def initial_seed():
    """The seed the default generator was last seeded with."""
    return default_generator.initial_seed()


def get_rng_state():
    """The default generator's state as a uint8 tensor."""
    return default_generator.get_state()


def set_rng_state(new_state):
    """Restores a state returned by ``get_rng_state``."""
    default_generator.set_state(new_state)


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, **kwargs):
    """Restores the default generator's state on exit (random draws inside do not affect those after)."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
