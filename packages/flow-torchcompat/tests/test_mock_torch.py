"""oneflow.mock_torch: enable/disable round trips beside a real PyTorch, the torch module paths programs import,
missing names (strict and lazy), and the torch-shaped surface programs touch."""
import importlib
import os
import subprocess
import sys
import textwrap

import pytest
import torch as real_torch

import oneflow as flow
import oneflow.mock_torch as mock

MODULES = ["torch", "torch.nn", "torch.nn.functional", "torch.nn.init", "torch.nn.utils", "torch.optim",
           "torch.optim.lr_scheduler", "torch.utils", "torch.utils.data", "torch.utils.checkpoint",
           "torch.utils.dlpack", "torch.autograd", "torch.distributed", "torch.cuda", "torch.backends",
           "torch.testing", "torch.linalg", "torch.special", "torch.distributions", "torch.amp", "torch.nn.parallel"]


def test_plugin_entry_point():
    assert flow.mock_torch is mock
    assert importlib.import_module("oneflow.mock_torch") is mock


@pytest.mark.parametrize("name", MODULES)
def test_torch_modules_resolve_to_oneflow(name):
    with mock.enable():
        m = importlib.import_module(name)
        target = importlib.import_module("oneflow" + name[len("torch"):])
        assert m.__name__ == name and m.__dict__["_oneflow_module"] is target
        for attr in [a for a in dir(target) if not a.startswith("_")][:50]:
            v = getattr(m, attr)
            assert v is getattr(target, attr) or getattr(v, "_oneflow_module", None) is getattr(target, attr)
    assert sys.modules[name.partition(".")[0]] is real_torch


def test_enable_disable_round_trip_beside_real_torch():
    before = {n: m for n, m in sys.modules.items() if n == "torch" or n.startswith("torch.")}
    mock.enable()
    assert mock.is_enabled()
    import torch
    import torch.nn as nn
    from torch import Tensor
    from torch.nn import functional as F

    assert torch is not real_torch and nn.Linear is flow.nn.Linear and Tensor is flow.Tensor
    assert F.relu is flow.nn.functional.relu and torch.cuda.is_available() is False
    assert isinstance(torch.ones(2), Tensor)
    mock.disable()
    assert not mock.is_enabled()
    after = {n: m for n, m in sys.modules.items() if n == "torch" or n.startswith("torch.")}
    assert after == before
    import torch

    assert torch is real_torch and torch.nn.Linear is not flow.nn.Linear
    mock.disable()  # a second disable is a no-op


def test_context_manager_and_nesting():
    with mock.enable() as ctx:
        import torch

        assert torch.nn.Module is flow.nn.Module and ctx is not None
        with mock.enable(lazy=True):
            import torch

            assert repr(torch.no_such_name).startswith("<oneflow.mock_torch placeholder")
        assert mock.is_enabled()  # the inner block restored the outer state, strict again
        import torch

        with pytest.raises(AttributeError):
            torch.no_such_name
    assert not mock.is_enabled()
    import torch

    assert torch is real_torch


def test_modules_imported_under_the_mock_keep_working(tmp_path):
    (tmp_path / "user_model_lib.py").write_text(textwrap.dedent("""
        import torch
        import torch.nn as nn

        class Scale(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(torch.ones(3))

            def forward(self, x):
                return torch.nn.functional.relu(x * self.w)
    """))
    sys.path.insert(0, str(tmp_path))
    try:
        with mock.enable():
            import user_model_lib
        m = user_model_lib.Scale()
        assert isinstance(m, flow.nn.Module)
        out = m(flow.tensor([-1.0, 2.0, 3.0]))
        assert isinstance(out, flow.Tensor) and out.tolist() == [0.0, 2.0, 3.0]
        assert "torch.nn.functional" not in sys.modules or sys.modules["torch.nn.functional"] is \
            real_torch.nn.functional  # reads after disable() don't leak mock modules into sys.modules
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("user_model_lib", None)


def test_strict_mode_names_the_missing_torch_api():
    with mock.enable():
        import torch

        with pytest.raises(AttributeError, match="torch.no_such_op is not provided by oneflow") as e:
            torch.no_such_op
        assert e.value.name == "no_such_op"
        assert not hasattr(torch.nn, "NoSuchLayer")
        with pytest.raises(ModuleNotFoundError, match="No module named 'torch.no_such_mod': torch.no_such_mod is "
                                                      "not provided by oneflow"):
            import torch.no_such_mod  # noqa: F401
        with pytest.raises(ImportError, match="torch.nn.NoSuchLayer is not provided by oneflow"):
            from torch.nn import NoSuchLayer  # noqa: F401
        with pytest.raises(AttributeError):
            torch.__no_such_dunder__


def test_names_a_companion_package_provides_say_which_to_install():
    if "distributed.init_process_group" in flow._plugins.available() or "distributed" in flow._plugins.available():
        pytest.skip("flow-dist is installed here")
    with mock.enable():
        import torch

        assert torch.distributed.is_available() is False
        with pytest.raises(AttributeError, match="torch.distributed.init_process_group is not provided by oneflow "
                                                 "as installed: .*'flow-dist' package"):
            torch.distributed.init_process_group
        with pytest.raises(ModuleNotFoundError, match="No module named 'torch.distributed.launch': .*flow-dist"):
            import torch.distributed.launch  # noqa: F401


def test_lazy_mode_placeholders_raise_only_when_used(capsys):
    with mock.enable(lazy=True, verbose=True):
        import torch
        import torch.no_such_mod.deeper as deeper
        from torch.nn import NoSuchLayer

        thing = torch.no_such_op
        assert "torch.no_such_op is not provided by oneflow" in capsys.readouterr().err  # verbose
        with pytest.raises(mock.NotProvidedError, match="torch.no_such_op is not provided by oneflow"):
            thing(1)
        with pytest.raises(NotImplementedError, match="torch.no_such_mod.deeper.f is not provided"):
            deeper.f()
        with pytest.raises(NotImplementedError, match="torch.nn.NoSuchLayer"):
            class Sub(NoSuchLayer):
                pass
        with pytest.raises(NotImplementedError, match="torch.nn.NoSuchLayer"):
            isinstance(1, NoSuchLayer)
        assert torch.nn.Linear is flow.nn.Linear  # what exists is still the real thing


def test_version_strings_parse():
    from packaging.version import Version

    with mock.enable():
        import torch

        v = Version(torch.__version__)
        assert (v.major, v.minor) == (2, 13) and v.local == "oneflow"
        assert torch.version.__version__ == torch.__version__ and torch.version.cuda is None
        assert tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 0)
        from torch.version import cuda

        assert cuda is None
    assert flow.__version__ != mock.TORCH_VERSION  # oneflow's own version is untouched


def test_the_torch_surface_programs_touch(tmp_path):
    with mock.enable():
        import torch
        import torch.nn as nn

        assert torch.Size([2, 3]) == (2, 3) and torch.zeros(2, 3).shape == torch.Size([2, 3])
        assert torch.device("cpu").type == "cpu"
        assert torch.float is torch.float32 and torch.long is torch.int64 and torch.half is torch.float16
        assert torch.bfloat16 is flow.bfloat16 and torch.bool is flow.bool
        torch.manual_seed(7)
        a = torch.randn(4)
        torch.manual_seed(7)
        assert torch.equal(a, torch.randn(4))
        w = torch.ones(2, requires_grad=True)
        with torch.no_grad():
            assert not (w * 2).requires_grad
        model = nn.Sequential(nn.Linear(3, 2), nn.ReLU()).to(torch.device("cpu"))
        path = tmp_path / "m.pt"
        torch.save(model.state_dict(), path)
        other = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
        other.load_state_dict(torch.load(path))
        assert torch.equal(other[0].weight, model[0].weight)
        with pytest.raises(RuntimeError, match="CUDA|cuda"):
            model.cuda()
        with pytest.raises(RuntimeError, match="CUDA|cuda"):
            torch.ones(2).cuda()


class ThirdPartyBlock:  # stands for a library's module class, defined against whatever `torch` was imported
    @staticmethod
    def make(torch):
        class Block(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(4, 4)

            def forward(self, x):
                return torch.tanh(self.fc(x)) + x

        return Block


def test_third_party_module_subclasses_and_dataloader_workers():
    with mock.enable():
        import torch
        from torch.utils.data import DataLoader, Dataset

        block = ThirdPartyBlock.make(torch)()
        assert isinstance(block, flow.nn.Module) and len(list(block.parameters())) == 2

        class Squares(Dataset):
            def __len__(self):
                return 12

            def __getitem__(self, i):
                return torch.tensor([float(i)]), torch.tensor(i * i)

        loader = DataLoader(Squares(), batch_size=4, num_workers=2)
        got = sorted(int(v) for _, y in loader for v in y)
        assert got == [i * i for i in range(12)]
        out = block(torch.ones(2, 4))
        assert out.shape == (2, 4)


def test_real_torch_and_to_torch_while_mocked():
    from oneflow.utils.tensor import to_torch

    with mock.enable():
        import torch

        assert mock.real_torch() is real_torch and torch is not real_torch
        t = to_torch(torch.arange(3.0))  # the real torch's tensor, sharing memory
        assert isinstance(t, real_torch.Tensor) and t.tolist() == [0.0, 1.0, 2.0]
        import torch as again

        assert again is torch  # the mock stays on


def _env_without_mock():
    env = dict(os.environ)
    env.pop("ONEFLOW_MOCK_TORCH_LAZY", None)
    return env


def test_cli_prints_shell_commands_that_enable_and_disable():
    env = _env_without_mock()
    out = subprocess.run([sys.executable, "-m", "oneflow.mock_torch"], env=env, capture_output=True, text=True,
                         timeout=120, check=True).stdout
    script = f"{out.strip()}; {sys.executable} -c 'import torch, oneflow; print(torch.__version__, " \
             "torch.nn.Linear is oneflow.nn.Linear)'"
    shown = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert shown.stdout.split() == [mock.TORCH_VERSION, "True"], shown.stderr
    lazy = subprocess.run([sys.executable, "-m", "oneflow.mock_torch", "--lazy"], env=env, capture_output=True,
                          text=True, timeout=120, check=True).stdout
    assert "ONEFLOW_MOCK_TORCH_LAZY=1" in lazy
    off = subprocess.run(["bash", "-c", f"{out.strip()}; eval $({sys.executable} -m oneflow.mock_torch disable); "
                                        f"{sys.executable} -c 'import torch; print(torch.__version__)'"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert off.stdout.strip() == real_torch.__version__, off.stderr
