"""The plugin mechanism: entry points in group `oneflow.plugins` attach names to the oneflow namespace, modules,
Tensor attributes and compile backends; without the plugin, errors that name the package to install."""
import os
import subprocess
import sys
import textwrap

import pytest

import oneflow as flow
from oneflow import _plugins


@pytest.mark.parametrize("name,package", [("placement", "flow-dist"), ("sbp", "flow-dist"), ("env", "flow-dist"), ("comm", "flow-dist"),
                                          ("one_embedding", "flow-embedding"), ("mock_torch", "flow-torchcompat")])
def test_missing_plugins_name_their_package(name, package):
    if name in _plugins.available():
        pytest.skip(f"{package} is installed in this environment")
    with pytest.raises(AttributeError, match=package):
        getattr(flow, name)
    assert not hasattr(flow, name)


def test_missing_graph_names_flow_graph():
    if "nn.Graph" in _plugins.available():
        pytest.skip("flow-graph is installed in this environment")
    with pytest.raises(_plugins.PluginNotInstalledError, match="flow-graph"):
        flow.nn.Graph


def test_unknown_attribute_is_plain_attribute_error():
    with pytest.raises(AttributeError, match="has no attribute 'definitely_not_here'"):
        flow.definitely_not_here


def test_registered_plugin_appears(tmp_path, monkeypatch):
    (tmp_path / "fake_flow_plugin.py").write_text(textwrap.dedent("""
        FEATURE = "hello from a plugin"
        class Graph:
            pass
    """))
    dist = tmp_path / "fake_flow_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-flow-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[oneflow.plugins]\nmy_feature = fake_flow_plugin:FEATURE\nnn.MyGraph = fake_flow_plugin:Graph\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    _plugins.refresh()
    try:
        assert "my_feature" in _plugins.available()
        assert flow.my_feature == "hello from a plugin"
        assert flow.nn.MyGraph.__name__ == "Graph"
    finally:
        monkeypatch.undo()
        sys.modules.pop("fake_flow_plugin", None)
        _plugins.refresh()
    with pytest.raises(AttributeError):
        flow.my_feature


# ---- not installed: errors that are AttributeErrors on access and ImportErrors on import -----------------------
def _skip_if_installed(name):
    if name in _plugins.available():
        pytest.skip(f"a plugin providing {name} is installed in this environment")


@pytest.mark.parametrize("statement,package", [
    ("from oneflow.nn import Graph", "flow-graph"),
    ("import oneflow.mock_torch", "flow-torchcompat"),
    ("from oneflow import mock_torch", "flow-torchcompat"),
    ("from oneflow.framework.infer_compiler import compile_from_torch", "flow-torchcompat"),
    ("from oneflow import one_embedding", "flow-embedding"),
    ("import oneflow.one_embedding", "flow-embedding"),
    ("from oneflow import placement", "flow-dist"),
    ("from oneflow.distributed import init_process_group", "flow-dist"),
    ("import oneflow.distributed.launch", "flow-dist"),
])
def test_imports_of_missing_plugins_name_their_package(statement, package):
    for name in ("nn.Graph", "mock_torch", "framework", "one_embedding", "placement", "distributed",
                 "nn.parallel.DistributedDataParallel"):
        _skip_if_installed(name)
    with pytest.raises(ModuleNotFoundError, match=f"'{package}' package, which is not installed") as e:
        exec(statement, {})
    assert isinstance(e.value, _plugins.PluginNotInstalledError)


def test_attribute_and_import_errors_share_the_plugin_base():
    _skip_if_installed("placement")
    with pytest.raises(_plugins.PluginNotInstalledError) as e:
        flow.placement
    assert isinstance(e.value, AttributeError) and not isinstance(e.value, ImportError)
    assert not hasattr(flow, "placement") and getattr(flow, "sbp", None) is None
    with pytest.raises(_plugins.PluginNotInstalledError) as e:
        import oneflow.env  # noqa: F401
    assert isinstance(e.value, ImportError)


def test_unknown_submodule_is_plain_module_not_found():
    with pytest.raises(ModuleNotFoundError, match="No module named 'oneflow.no_such_module'") as e:
        import oneflow.no_such_module  # noqa: F401
    assert not isinstance(e.value, _plugins.PluginNotInstalledError)
    with pytest.raises(ImportError, match="cannot import name 'NoSuchThing' from 'oneflow.nn'"):
        from oneflow.nn import NoSuchThing  # noqa: F401


def test_distributed_imports_without_flow_dist():
    _skip_if_installed("distributed")
    import oneflow.distributed as dist

    assert flow.distributed is dist
    assert dist.is_available() is False and dist.is_initialized() is False
    with pytest.raises(AttributeError, match="oneflow.distributed.init_process_group is provided by the 'flow-dist'"):
        dist.init_process_group("gloo")
    assert not hasattr(dist, "get_rank")


def test_launch_without_flow_dist_is_one_line_naming_the_package(tmp_path):
    _skip_if_installed("distributed")
    r = subprocess.run([sys.executable, "-m", "oneflow.distributed.launch", "--nproc", "2", "train.py"],
                       capture_output=True, text=True, cwd=tmp_path, env=_env_with_path())
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "flow-dist" in r.stderr and "Traceback" not in r.stderr


def test_tensor_plugin_attributes_without_flow_dist():
    _skip_if_installed("Tensor.placement")
    t = flow.ones(2)
    assert t.is_global is False  # local tensors, as in OneFlow
    assert not hasattr(t, "placement") and not hasattr(t, "sbp")
    with pytest.raises(AttributeError, match="oneflow.Tensor.placement is provided by the 'flow-dist' package"):
        flow.Tensor.placement
    with pytest.raises(_plugins.PluginNotInstalledError, match="Tensor.to_global.*flow-dist"):
        t.to_global(placement=None, sbp=None)
    with pytest.raises(AttributeError, match="^'Tensor' object has no attribute 'no_such_attr'$"):
        t.no_such_attr
    with pytest.raises(AttributeError, match="^'Parameter' object has no attribute '_private'$"):
        flow.nn.Parameter(t)._private


def test_ddp_without_flow_dist():
    _skip_if_installed("nn.parallel.DistributedDataParallel")
    assert flow.nn.parallel is sys.modules["oneflow.nn.parallel"]
    # programs import DDP whether or not they run distributed (torch's habit): the import works, using it raises
    from oneflow.nn.parallel import DistributedDataParallel as DDP

    assert DDP.__name__ == "DistributedDataParallel"
    with pytest.raises(AttributeError, match="nn.parallel.DistributedDataParallel is provided by the 'flow-dist'"):
        DDP(flow.nn.Linear(1, 1))
    with pytest.raises(AttributeError, match="nn.parallel.DistributedDataParallel is provided by the 'flow-dist'"):
        flow.nn.parallel.DistributedDataParallel(flow.nn.Linear(1, 1))
    with pytest.raises(AttributeError, match="module 'oneflow.nn.parallel' has no attribute 'Nope'"):
        flow.nn.parallel.Nope


# ---- installed: a fake flow-dist and flow-torchcompat ---------------------------------------------------------
FAKE_MODULES = {
    "fake_flow_dist/__init__.py": "",
    "fake_flow_dist/distributed/__init__.py": """
        def is_available():
            return True
        def get_rank():
            return 3
    """,
    "fake_flow_dist/distributed/launch.py": """
        import sys
        from . import get_rank  # relative imports resolve in the plugin's package
        if __name__ == "__main__":
            print("fake launch", sys.argv[1:], get_rank())
    """,
    "fake_flow_dist/env.py": """
        def get_world_size():
            return 4
        def get_rank():
            return 1
    """,
    "fake_flow_dist/tensor.py": """
        def to_global(self, placement=None, sbp=None):
            return ("global", tuple(self.shape), placement, sbp)
        placement = property(lambda self: "fake-placement")
        is_global = property(lambda self: True)
        def total(self):
            return self.sum().item()
    """,
    "fake_flow_dist/ddp.py": """
        class DistributedDataParallel:
            def __init__(self, module):
                self.module = module
    """,
    "fake_flow_dist/backend.py": """
        CALLS = []
        def fake_backend(model, example_inputs):
            CALLS.append((model, example_inputs))
            return lambda *args: ("compiled", model(*args))
    """,
    "fake_flow_torchcompat/__init__.py": "",
    "fake_flow_torchcompat/mock_torch.py": """
        def enable():
            return "enabled"
    """,
    "broken_flow_plugin.py": """
        raise ImportError("broken_flow_plugin needs libfoo")
    """,
}

FAKE_ENTRY_POINTS = """
[oneflow.plugins]
distributed = fake_flow_dist.distributed
env = fake_flow_dist.env
Tensor.to_global = fake_flow_dist.tensor:to_global
Tensor.placement = fake_flow_dist.tensor:placement
Tensor.is_global = fake_flow_dist.tensor:is_global
Tensor.total = fake_flow_dist.tensor:total
nn.parallel.DistributedDataParallel = fake_flow_dist.ddp:DistributedDataParallel
compile_backend.fake = fake_flow_dist.backend:fake_backend
mock_torch = fake_flow_torchcompat.mock_torch
"""


def _env_with_path(*paths):
    import oneflow

    src = os.path.dirname(os.path.dirname(oneflow.__file__))
    return {**os.environ, "PYTHONPATH": os.pathsep.join([*map(str, paths), src])}


def _write_plugin(root, entry_points, name="fake-flow-plugins"):
    for rel, text in FAKE_MODULES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    dist = root / f"{name.replace('-', '_')}-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(entry_points)


@pytest.fixture
def fake_plugins(tmp_path, monkeypatch):
    _write_plugin(tmp_path, FAKE_ENTRY_POINTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    _plugins.refresh()
    yield tmp_path
    monkeypatch.undo()
    for name in list(sys.modules):
        if name.split(".")[0] in ("fake_flow_dist", "fake_flow_torchcompat", "broken_flow_plugin"):
            del sys.modules[name]
    _plugins.refresh()


def test_distributed_is_the_plugins_module(fake_plugins):
    import fake_flow_dist.distributed
    import oneflow.distributed
    import oneflow.distributed.launch

    assert oneflow.distributed is fake_flow_dist.distributed and flow.distributed is fake_flow_dist.distributed
    assert oneflow.distributed.get_rank() == 3
    # the submodule is the plugin's own, not a second copy under the oneflow name
    assert oneflow.distributed.launch is sys.modules["fake_flow_dist.distributed.launch"]
    from oneflow.distributed import get_rank

    assert get_rank is fake_flow_dist.distributed.get_rank


def test_launch_runs_the_plugins_launcher(fake_plugins):
    r = subprocess.run([sys.executable, "-m", "oneflow.distributed.launch", "--nproc", "2", "train.py"],
                       capture_output=True, text=True, env=_env_with_path(fake_plugins))
    assert r.returncode == 0, r.stderr
    assert r.stdout == "fake launch ['--nproc', '2', 'train.py'] 3\n"


def test_mock_torch_is_the_plugins_module(fake_plugins):
    import fake_flow_torchcompat.mock_torch
    import oneflow.mock_torch

    assert oneflow.mock_torch is fake_flow_torchcompat.mock_torch and flow.mock_torch.enable() == "enabled"
    from oneflow import mock_torch

    assert mock_torch is fake_flow_torchcompat.mock_torch


def test_tensor_attributes_from_the_plugin(fake_plugins):
    t = flow.ones(2, 3)
    assert t.is_global is True and t.placement == "fake-placement"
    assert t.to_global("p", sbp="s") == ("global", (2, 3), "p", "s")
    assert t.total() == 6.0  # a name flow-core doesn't know: its stand-in came with the entry points
    assert isinstance(flow.Tensor.placement, property)
    assert flow.nn.Parameter(t).is_global is True  # installed on the class: subclasses see it too
    sys.path.remove(str(fake_plugins))  # the plugin goes away: flow-core's stand-ins come back
    _plugins.refresh()
    assert t.is_global is False and not hasattr(t, "placement") and not hasattr(t, "total")


def test_ddp_and_compile_backend_from_the_plugin(fake_plugins):
    import fake_flow_dist.backend

    lin = flow.nn.Linear(2, 2)
    assert flow.nn.parallel.DistributedDataParallel(lin).module is lin
    from oneflow.nn.parallel import DistributedDataParallel

    assert DistributedDataParallel is flow.nn.parallel.DistributedDataParallel
    assert "fake" in flow.compiler.list_backends()

    def f(x):
        return x + 1

    cf = flow.compile(f, backend="fake")
    assert cf(1) == ("compiled", 2) and cf(5) == ("compiled", 6)
    assert fake_flow_dist.backend.CALLS == [(f, [1])]  # compiled once, at the first call
    cm = flow.compile(lin, backend="fake")
    x = flow.ones(1, 2)
    tag, out = cm(x)
    assert tag == "compiled" and flow.equal(out, lin(x))
    with pytest.raises(RuntimeError, match="Invalid backend: 'missing'"):
        flow.compile(f, backend="missing")


def test_distributed_sampler_uses_the_plugins_env(fake_plugins, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    s = flow.utils.data.DistributedSampler(list(range(8)), shuffle=False)
    assert (s.num_replicas, s.rank) == (4, 1) and list(s) == [1, 5]


def test_broken_plugin_raises_its_own_error(tmp_path, monkeypatch):
    _write_plugin(tmp_path, "[oneflow.plugins]\nenv = broken_flow_plugin\n", name="broken-flow-plugin")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    _plugins.refresh()
    try:
        with pytest.raises(ImportError, match="broken_flow_plugin needs libfoo") as e:
            flow.env
        assert not isinstance(e.value, _plugins.PluginNotInstalledError)
        # not hidden behind the env-var fallback: a broken plugin must not silently give every rank everything
        with pytest.raises(ImportError, match="broken_flow_plugin needs libfoo"):
            flow.utils.data.DistributedSampler(list(range(8)))
    finally:
        monkeypatch.undo()
        for name in list(sys.modules):
            if name.split(".")[0] in ("fake_flow_dist", "fake_flow_torchcompat", "broken_flow_plugin"):
                del sys.modules[name]
        _plugins.refresh()
    s = flow.utils.data.DistributedSampler(list(range(8)), num_replicas=2, rank=0)
    assert len(s) == 4


def test_installed_package_without_the_entry_point_says_so(tmp_path, monkeypatch):
    _skip_if_installed("placement")
    dist = tmp_path / "flow_dist-0.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: flow-dist\nVersion: 0.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    _plugins.refresh()
    try:
        with pytest.raises(AttributeError, match="'flow-dist' package, which is installed but does not register it"):
            flow.placement
    finally:
        monkeypatch.undo()
        _plugins.refresh()
    with pytest.raises(AttributeError, match="'flow-dist' package, which is not installed"):
        flow.placement


def test_creation_with_placement_needs_flow_dist():
    from oneflow import _plugins

    hook = _plugins.load("_global_from_full")
    if hook is not None:  # flow-dist is installed: its own tests cover global creation
        assert hook.__module__ == "oneflow_dist.global_tensor"
        return
    with pytest.raises(AttributeError, match="flow-dist"):
        flow.zeros(2, placement="p", sbp="s")
    with pytest.raises(ValueError, match="go together"):
        flow.randn(2, sbp="s")
    assert flow.zeros(2).tolist() == [0.0, 0.0] and flow.randn.__name__ == "randn"


def test_global_checkpoints_without_flow_dist(tmp_path):
    _skip_if_installed("_global_checkpoint")
    with pytest.raises(_plugins.PluginNotInstalledError, match="flow-dist"):
        flow.save({"x": flow.ones(2)}, tmp_path / "x.pt", global_dst_rank=0)
    assert not (tmp_path / "x.pt").exists()
    flow.save({"x": flow.ones(2)}, tmp_path / "x.pt")
    with pytest.raises(_plugins.PluginNotInstalledError, match="flow-dist"):
        flow.load(tmp_path / "x.pt", global_src_rank=0)
