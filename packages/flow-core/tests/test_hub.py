"""oneflow.hub: cached downloads that work offline (file:// URLs stand in for the network), SHA-256 checks,
PyTorch state dicts by URL, hubconf.py entrypoints from a local directory and from the cache, and the errors
that say what to place where when there is no network."""
import hashlib
import os

import numpy as np
import pytest

import oneflow as flow
from helpers import torch

# a port nothing listens on: the connection is refused at once, as with no network
UNREACHABLE = "http://127.0.0.1:9"


@pytest.fixture
def hub_dir(tmp_path):
    old = flow.hub.get_dir()
    flow.hub.set_dir(tmp_path / "hub")
    yield tmp_path / "hub"
    flow.hub.set_dir(old)


def test_get_dir_follows_oneflow_home(monkeypatch):
    monkeypatch.setattr(flow.hub, "_hub_dir", None)
    monkeypatch.setenv("ONEFLOW_HOME", "/some/where")
    assert flow.hub.get_dir() == os.path.join("/some/where", "hub")
    monkeypatch.delenv("ONEFLOW_HOME")
    monkeypatch.setenv("XDG_CACHE_HOME", "/cache")
    assert flow.hub.get_dir() == os.path.join("/cache", "oneflow", "hub")


def test_download_url_to_file_checks_the_hash(tmp_path):
    src = tmp_path / "blob.bin"
    src.write_bytes(b"x" * 100_000)
    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    dst = tmp_path / "out" / "blob.bin"
    flow.hub.download_url_to_file(src.as_uri(), dst, hash_prefix=digest[:8], progress=False)
    assert dst.read_bytes() == src.read_bytes()
    bad = tmp_path / "out" / "bad.bin"
    with pytest.raises(RuntimeError, match="invalid hash value"):
        flow.hub.download_url_to_file(src.as_uri(), bad, hash_prefix="0000", progress=False)
    assert not bad.exists()
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["blob.bin"]  # no temporary left behind


def test_load_state_dict_from_url_torch_file_then_cached(hub_dir, tmp_path):
    sd = {"weight": torch.arange(6.0).reshape(2, 3), "bias": torch.tensor([1.0, -1.0])}
    raw = tmp_path / "lin.pth"
    torch.save(sd, raw)
    digest = hashlib.sha256(raw.read_bytes()).hexdigest()
    named = tmp_path / f"lin-{digest[:8]}.pth"
    os.rename(raw, named)
    got = flow.hub.load_state_dict_from_url(named.as_uri(), check_hash=True, progress=False)
    np.testing.assert_array_equal(got["weight"].numpy(), sd["weight"].numpy())
    assert (hub_dir / "checkpoints" / named.name).exists()
    m = flow.nn.Linear(3, 2)
    m.load_state_dict(got)
    os.unlink(named)  # the source is gone: the cached copy serves the second call
    again = flow.hub.load_state_dict_from_url(named.as_uri(), progress=False)
    np.testing.assert_array_equal(again["bias"].numpy(), [1.0, -1.0])


def test_load_state_dict_from_url_file_name_and_model_dir(tmp_path):
    flow.save({"a": flow.ones(2)}, tmp_path / "src.bin")
    out = flow.hub.load_state_dict_from_url((tmp_path / "src.bin").as_uri(), model_dir=tmp_path / "m",
                                            file_name="renamed.pt", progress=False)
    assert (tmp_path / "m" / "renamed.pt").exists()
    np.testing.assert_array_equal(out["a"].numpy(), [1.0, 1.0])


def test_offline_download_names_the_file_to_place(hub_dir):
    with pytest.raises(RuntimeError) as e:
        flow.hub.load_state_dict_from_url(f"{UNREACHABLE}/weights/resnet-abc123.pth", progress=False)
    msg = str(e.value)
    assert "could not download" in msg and os.path.join(str(hub_dir), "checkpoints", "resnet-abc123.pth") in msg
    assert not os.listdir(hub_dir / "checkpoints")  # nothing partial written


def write_hubconf(d, body):
    d.mkdir(parents=True, exist_ok=True)
    (d / "helper_mod.py").write_text("SCALE = 3\n")
    (d / "hubconf.py").write_text(body)


HUBCONF = '''
dependencies = ["numpy"]
import oneflow as flow
from helper_mod import SCALE


def tiny(out_features=4, scale=1):
    """A tiny linear model."""
    m = flow.nn.Linear(2, out_features)
    flow.nn.init.constant_(m.weight, SCALE * scale)
    return m


def _private():
    pass
'''


def test_load_from_local_directory(tmp_path):
    write_hubconf(tmp_path / "repo", HUBCONF)
    m = flow.hub.load(str(tmp_path / "repo"), "tiny", 5, source="local", scale=2)
    assert m.weight.shape == (5, 2) and float(m.weight[0, 0]) == 6.0
    with pytest.raises(RuntimeError, match="Cannot find callable nope in hubconf"):
        flow.hub.load(str(tmp_path / "repo"), "nope", source="local")
    with pytest.raises(ValueError, match="Unknown source"):
        flow.hub.load(str(tmp_path / "repo"), "tiny", source="gitlab")


def test_missing_dependencies_and_missing_hubconf(tmp_path):
    write_hubconf(tmp_path / "r", 'dependencies = ["surely_not_installed_pkg"]\n')
    with pytest.raises(RuntimeError, match="Missing dependencies: surely_not_installed_pkg"):
        flow.hub.load(str(tmp_path / "r"), "x", source="local")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="hubconf.py not found"):
        flow.hub.load(str(tmp_path / "empty"), "x", source="local")


def test_github_repo_from_cache_offline(hub_dir):
    write_hubconf(hub_dir / "owner_models_main", HUBCONF)
    assert flow.hub.list("owner/models", verbose=False) == ["tiny"]
    assert flow.hub.help("owner/models", "tiny") == "A tiny linear model."
    m = flow.hub.load("owner/models", "tiny", verbose=False)
    assert float(m.weight[0, 0]) == 3.0
    write_hubconf(hub_dir / "owner_models_v1.0", HUBCONF)
    assert flow.hub.load("owner/models:v1.0", "tiny", out_features=1, verbose=False).weight.shape == (1, 2)


def test_github_repo_not_cached_offline(hub_dir, monkeypatch):
    monkeypatch.setattr("urllib.request.urlopen", _refuse)
    with pytest.raises(RuntimeError) as e:
        flow.hub.load("owner/other", "tiny", verbose=False)
    assert "could not download" in str(e.value) and os.path.join(str(hub_dir), "owner_other_main") in str(e.value)
    with pytest.raises(ValueError, match="repo_owner/repo_name"):
        flow.hub.load("not-a-repo", "tiny")


def _refuse(*args, **kwargs):
    import urllib.error

    raise urllib.error.URLError("no network")
