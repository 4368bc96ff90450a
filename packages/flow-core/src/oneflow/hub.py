"""Pretrained weights and models by URL or repository, as ``torch.hub``: ``load_state_dict_from_url``,
``download_url_to_file``, ``load``/``list``/``help`` over a repository's ``hubconf.py``, ``get_dir``/``set_dir``.

Everything downloaded is cached under :func:`get_dir` and found there again without any network, so a file
placed in the cache by hand (or a repository unpacked there) works offline. When a download is needed and
fails, the error says which file to place where.
"""
import hashlib
import importlib.util
import os
import re
import shutil
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load", "load_state_dict_from_url", "set_dir"]

_TIMEOUT = 60  # seconds without data before a download is given up
_HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")  # "resnet18-f37072fd.pth": the start of the file's SHA-256
_hub_dir = None


def get_dir():
    r"""The directory the hub caches into: the one given to :func:`set_dir`, else ``$ONEFLOW_HOME/hub``, else
    ``$XDG_CACHE_HOME/oneflow/hub`` (``~/.cache/oneflow/hub``)."""
    if _hub_dir is not None:
        return _hub_dir
    home = os.getenv("ONEFLOW_HOME")
    if home is None:
        home = os.path.join(os.getenv("XDG_CACHE_HOME", "~/.cache"), "oneflow")
    return os.path.join(os.path.expanduser(home), "hub")


def set_dir(d):
    r"""Sets the hub's cache directory (see :func:`get_dir`)."""
    global _hub_dir
    _hub_dir = os.path.expanduser(os.fspath(d))


def download_url_to_file(url, dst, hash_prefix=None, progress=True):
    r"""Downloads ``url`` to the file ``dst``.

    The data goes to a temporary file beside ``dst`` that is renamed into place only once complete (and, with
    ``hash_prefix``, once its SHA-256 digest is seen to start with it), so an interrupted download never
    leaves a partial ``dst``.

    Args:
        url (str): what to download (``http(s)://``, or ``file://`` for a local file).
        dst (str): where to save it.
        hash_prefix (str, optional): the expected start of the file's SHA-256 hex digest.
        progress (bool): print a progress line to stderr.
    """
    _download(url, dst, hash_prefix, progress, _TIMEOUT)


def _download(url, dst, hash_prefix, progress, timeout):
    """download_url_to_file with a chosen timeout (the dataset readers fail faster when offline)."""
    dst = os.path.expanduser(os.fspath(dst))
    folder = os.path.dirname(os.path.abspath(dst))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".download-")
    sha = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as f:
            req = urllib.request.Request(url, headers={"User-Agent": "oneflow-hub"})
            with urllib.request.urlopen(req, timeout=timeout) as r:
                total = r.headers.get("Content-Length") if hasattr(r, "headers") else None
                done = 0
                while True:
                    chunk = r.read(1 << 16)
                    if not chunk:
                        break
                    f.write(chunk)
                    sha.update(chunk)
                    done += len(chunk)
                    if progress:
                        _show_progress(done, int(total) if total else None)
        if progress:
            sys.stderr.write("\n")
        if hash_prefix is not None and not sha.hexdigest().startswith(hash_prefix):
            raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got "{sha.hexdigest()}")')
        os.replace(tmp, dst)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _show_progress(done, total):
    if total:
        sys.stderr.write(f"\r{done / 2 ** 20:.1f} / {total / 2 ** 20:.1f} MiB ({100 * done / total:.0f}%)")
    else:
        sys.stderr.write(f"\r{done / 2 ** 20:.1f} MiB")


def _fetch(url, dst, hash_prefix, progress, what):
    """download_url_to_file with an offline failure that says where to put the file by hand."""
    if progress:
        sys.stderr.write(f'Downloading: "{url}" to {dst}\n')
    try:
        download_url_to_file(url, dst, hash_prefix, progress)
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise RuntimeError(f"oneflow.hub: could not download {url} ({reason}). Without network access, place "
                           f"{what} at {dst} and call again.") from None


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True, check_hash=False,
                             file_name=None, weights_only=None):
    r"""Loads the serialized object (usually a state dict) at ``url``, downloading it into the cache first
    unless it is already there.

    The file is read with :func:`oneflow.load`, so both this project's files and PyTorch ``.pt``/``.pth``
    state dicts load, and by default nothing in the file is executed.

    Args:
        url (str): the file's URL.
        model_dir (str, optional): the cache directory. Default: ``<get_dir()>/checkpoints``.
        map_location: passed to :func:`oneflow.load`.
        progress (bool): show download progress. Default: ``True``.
        check_hash (bool): verify the download against the SHA-256 prefix in the file name
            (``name-<sha256 prefix>.ext``). Default: ``False``.
        file_name (str, optional): the cached file's name. Default: the URL's last path component.
        weights_only (bool, optional): passed to :func:`oneflow.load`. ``None`` (the default) and ``True`` load
            data only; ``False`` unpickles without restriction, which can run code from the downloaded file.
            (PyTorch's default here is ``False``; this one stays safe unless asked.)
    """
    from .serialization import load as _load

    model_dir = os.path.expanduser(os.fspath(model_dir)) if model_dir is not None else \
        os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    name = file_name or os.path.basename(urllib.parse.urlparse(url).path)
    cached = os.path.join(model_dir, name)
    if not os.path.exists(cached):
        hash_prefix = None
        if check_hash:
            m = _HASH_REGEX.search(name)
            hash_prefix = m.group(1) if m else None
        _fetch(url, cached, hash_prefix, progress, "the file")
    return _load(cached, map_location=map_location, weights_only=True if weights_only is None else weights_only)


# ---- repositories with a hubconf.py ---------------------------------------------------------------------------
def _parse_repo(github):
    owner_name, _, ref = github.partition(":")
    if owner_name.count("/") != 1 or not all(owner_name.split("/")):
        raise ValueError(f'Invalid input: repo_owner/repo_name[:ref] expected, got "{github}"')
    owner, name = owner_name.split("/")
    return owner, name, ref or "main"


def _repo_dir(github, force_reload, verbose):
    """The unpacked repository in the cache, downloading its archive when missing (or force_reload)."""
    owner, name, ref = _parse_repo(github)
    hub = get_dir()
    repo_dir = os.path.join(hub, "_".join([owner, name, ref.replace("/", "_")]))
    if os.path.isdir(repo_dir) and not force_reload:
        if verbose:
            sys.stderr.write(f"Using cache found in {repo_dir}\n")
        return repo_dir
    os.makedirs(hub, exist_ok=True)
    archive = repo_dir + ".zip"
    _fetch(f"https://github.com/{owner}/{name}/zipball/{ref}", archive, None, verbose,
           f"the repository (unpacked, with its hubconf.py at the top) at {repo_dir}, not an archive,")
    try:
        with zipfile.ZipFile(archive) as z:
            top = z.namelist()[0].split("/")[0]
            staging = tempfile.mkdtemp(dir=hub, prefix=".unpack-")
            z.extractall(staging)
        if os.path.isdir(repo_dir):
            shutil.rmtree(repo_dir)
        os.replace(os.path.join(staging, top), repo_dir)
        shutil.rmtree(staging, ignore_errors=True)
    finally:
        os.unlink(archive)
    return repo_dir


def _load_hubconf(repo_dir):
    path = os.path.join(repo_dir, "hubconf.py")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"hubconf.py not found in {repo_dir}")
    sys.path.insert(0, repo_dir)  # the entrypoints may import the repository's own modules
    try:
        spec = importlib.util.spec_from_file_location("hubconf", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(repo_dir)
    missing = [d for d in getattr(module, "dependencies", []) if importlib.util.find_spec(d) is None]
    if missing:
        raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")
    return module


def _hubconf_for(repo_or_dir, source, force_reload, verbose):
    source = source.lower()
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    repo_dir = repo_or_dir if source == "local" else _repo_dir(repo_or_dir, force_reload, verbose)
    return _load_hubconf(repo_dir)


def _entrypoint(hubconf, model):
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    fn = getattr(hubconf, model, None)
    if fn is None or not callable(fn):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return fn


def list(github, force_reload=False, skip_validation=False, trust_repo=None, verbose=True):  # noqa: A001
    r"""The entrypoints (public callables of ``hubconf.py``) of a GitHub repository ``"owner/name[:ref]"``."""
    hubconf = _hubconf_for(github, "github", force_reload, verbose)
    return [n for n in dir(hubconf) if callable(getattr(hubconf, n)) and not n.startswith("_")]


def help(github, model, force_reload=False, skip_validation=False, trust_repo=None):  # noqa: A001
    r"""The docstring of entrypoint ``model`` of a GitHub repository ``"owner/name[:ref]"``."""
    return _entrypoint(_hubconf_for(github, "github", force_reload, True), model).__doc__


def load(repo_or_dir, model, *args, source="github", trust_repo=None, force_reload=False, verbose=True,
         skip_validation=False, **kwargs):
    r"""Calls entrypoint ``model`` of a repository's ``hubconf.py`` with ``*args, **kwargs`` and returns its
    result (usually a model).

    Args:
        repo_or_dir (str): ``"owner/name[:ref]"`` for ``source="github"`` (downloaded once into
            :func:`get_dir`, then used from there), or a local directory for ``source="local"``.
        model (str): the entrypoint's name.
        source (str): ``"github"`` or ``"local"``. Default: ``"github"``.
        force_reload (bool): download the repository again even if cached.

    Note: ``hubconf.py`` is Python code and runs; load only repositories you trust.
    """
    hubconf = _hubconf_for(repo_or_dir, source, force_reload, verbose)
    return _entrypoint(hubconf, model)(*args, **kwargs)
