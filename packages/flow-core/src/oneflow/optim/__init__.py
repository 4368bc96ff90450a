"""oneflow.optim: optimizers (PyTorch's semantics, one fused update op per parameter group; LBFGS, which
re-evaluates a closure inside its step, runs tensor ops over one flat vector instead) and learning-rate
schedulers (``oneflow.optim.lr_scheduler``)."""
from . import lr_scheduler  # noqa: F401
from . import swa_utils  # noqa: F401
from .adadelta import Adadelta
from .adafactor import Adafactor
from .adagrad import Adagrad
from .adam import Adam
from .adam_variants import Adamax, NAdam, RAdam
from .adamw import AdamW
from .asgd import ASGD
from .lamb import LAMB
from .lbfgs import LBFGS
from .muon import Muon
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "Adamax", "NAdam", "RAdam", "RMSprop", "Rprop", "ASGD", "Adagrad",
           "Adadelta", "Adafactor", "LAMB", "LBFGS", "Muon", "lr_scheduler", "swa_utils"]
