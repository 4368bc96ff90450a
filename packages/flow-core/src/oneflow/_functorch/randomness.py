"""The ``randomness`` flag of vmap and jacfwd: 'error' refuses random ops inside the function, 'same' gives every
batch element the same random draws, 'different' independent ones.

'error' is enforced with a dispatch mode that sees every op issued inside the function and raises on those the
registry marks ``random`` (dropout only when training). 'same' rewinds the default generator before each batch
element. 'different' needs nothing: the per-sample loop draws anew for each element.
"""
import contextlib

from .. import random as _random
from .._dispatch import DispatchMode

RANDOMNESS = ("error", "different", "same")
_DROPOUTS = ("dropout", "feature_dropout")


def check_randomness_arg(randomness):
    if randomness not in RANDOMNESS:
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")


class _RefuseRandom(DispatchMode):
    def __flow_dispatch__(self, op, inputs, attrs):
        if "random" in op.traits and not (op.name in _DROPOUTS and not attrs.get("train", True)):
            raise RuntimeError("vmap: called random operation while in randomness error mode. Please either use the "
                               "'same' or 'different' randomness flags on vmap or perform the randomness operation "
                               "out of vmap")
        return op.redispatch(inputs, attrs)


def guard(randomness):
    """Context manager active while the function runs: refuses random ops for ``randomness='error'``."""
    return _RefuseRandom() if randomness == "error" else contextlib.nullcontext()


class SameDraws:
    """For 'same': ``rewind()`` before each batch element puts the default generator back where it was when this
    object was made, so every element sees the same stream."""

    def __init__(self, randomness):
        self.state = _random.get_rng_state() if randomness == "same" else None

    def rewind(self):
        if self.state is not None:
            _random.set_rng_state(self.state)
