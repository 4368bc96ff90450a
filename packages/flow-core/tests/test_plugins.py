"""The plugin mechanism: entry points in group `oneflow.plugins` attach names to the oneflow namespace."""
import sys
import textwrap

import pytest

import oneflow as flow
from oneflow import _plugins


@pytest.mark.parametrize("name,package", [("placement", "flow-dist"), ("sbp", "flow-dist"), ("env", "flow-dist"),
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
