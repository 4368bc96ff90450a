"""The meta-path finder behind the mock: ``torch`` and ``torch.<x>`` are imported as ``TorchModule`` s over
``oneflow`` and ``oneflow.<x>``."""
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys

from ._modules import TorchModule, missing_module, torch_module

# torch modules whose oneflow counterpart lives at another path
RENAMES = {}


def oneflow_name(torch_name):
    if torch_name in RENAMES:
        return RENAMES[torch_name]
    return "oneflow" + torch_name[len("torch"):]


def is_torch_name(name):
    return name == "torch" or name.startswith("torch.")


class _Loader(importlib.abc.Loader):
    def __init__(self, module):
        self.module = module

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        pass  # the module reads its oneflow counterpart's attributes on demand


class TorchFinder(importlib.abc.MetaPathFinder):
    """First on ``sys.meta_path`` while the mock is enabled."""

    def __init__(self, settings):
        self.settings = settings

    def find_spec(self, fullname, path=None, target=None):
        if not is_torch_name(fullname):
            return None
        existing = sys.modules.get(fullname)
        if existing is not None:  # e.g. torch.version, made with torch
            return importlib.machinery.ModuleSpec(fullname, _Loader(existing), is_package=hasattr(existing, "__path__"))
        parent = fullname.rpartition(".")[0]
        if parent and not isinstance(sys.modules.get(parent), TorchModule):
            # a submodule of a placeholder module (lazy mode): a placeholder as well
            module = missing_module(fullname, self.settings)
        else:
            target_name = oneflow_name(fullname)
            cause = None
            try:
                found = importlib.util.find_spec(target_name) is not None
            except ImportError as e:  # oneflow.<x>'s own package is missing, or a plugin's is not installed
                found, cause = False, e
            target_module = None
            if found:
                try:
                    target_module = importlib.import_module(target_name)
                except ImportError as e:  # a stub that stands for a companion package (oneflow.distributed.launch)
                    cause = e
            if target_module is not None:
                module = torch_module(fullname, target_module, self.settings)
            else:
                module = missing_module(fullname, self.settings, cause)
        return importlib.machinery.ModuleSpec(fullname, _Loader(module), is_package=True)
