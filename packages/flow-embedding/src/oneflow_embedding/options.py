"""OneFlow's option builders for OneEmbedding: initializers, tables and columns, store options.

Every builder returns a plain dict (as OneFlow's do), checked here so that a mistake is reported where it was
made rather than at the first lookup.
"""
import numbers

__all__ = [
    "make_uniform_initializer", "make_normal_initializer", "make_constant_initializer", "make_table_options",
    "make_table", "make_column_options", "make_device_mem_store_options", "make_cached_ssd_store_options",
    "make_cached_host_mem_store_options",
]

# initializer kinds as the C++ store numbers them
_KINDS = {"uniform": 0, "normal": 1, "constant": 2}


def _number(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    return float(value)


def make_uniform_initializer(low, high):
    """Initializer drawing each value uniformly from ``[low, high)``.

    Args:
        low (float): the lower bound.
        high (float): the upper bound (``high > low``).
    """
    low, high = _number("low", low), _number("high", high)
    if not high > low:
        raise ValueError(f"make_uniform_initializer: high ({high}) must be greater than low ({low})")
    return {"type": "uniform", "low": low, "high": high}


def make_normal_initializer(mean, std):
    """Initializer drawing each value from a normal distribution ``N(mean, std**2)``.

    Args:
        mean (float): the mean.
        std (float): the standard deviation (``>= 0``).
    """
    mean, std = _number("mean", mean), _number("std", std)
    if std < 0:
        raise ValueError(f"make_normal_initializer: std must be >= 0, got {std}")
    return {"type": "normal", "mean": mean, "std": std}


def make_constant_initializer(value):
    """Initializer setting every value to ``value``."""
    return {"type": "constant", "value": _number("value", value)}


def _check_initializer(init, what):
    if not isinstance(init, dict) or init.get("type") not in _KINDS:
        raise TypeError(f"{what} must come from make_uniform_initializer, make_normal_initializer or "
                        f"make_constant_initializer, got {init!r}")
    return init


def initializer_spec(init):
    """(kind, a, b) of an initializer, as the C++ store takes it."""
    kind = init["type"]
    if kind == "uniform":
        return _KINDS[kind], init["low"], init["high"]
    if kind == "normal":
        return _KINDS[kind], init["mean"], init["std"]
    return _KINDS[kind], init["value"], 0.0


def make_column_options(initializer=None):
    """Options of one column of a :class:`MultiTableMultiColumnEmbedding` table.

    Args:
        initializer (dict, optional): the column's initializer; None uses the embedding's default.
    """
    if initializer is not None:
        _check_initializer(initializer, "initializer")
    return {"initializer": initializer}


def make_table_options(param):
    """Options of one table.

    Args:
        param: the table's initializer (a dict from ``make_*_initializer``), or a list of column options
            (from :func:`make_column_options`) for a :class:`MultiTableMultiColumnEmbedding` table.
    """
    if isinstance(param, (list, tuple)):
        columns = []
        for i, col in enumerate(param):
            if not isinstance(col, dict) or "initializer" not in col:
                raise TypeError(f"make_table_options: column {i} must come from make_column_options, got {col!r}")
            columns.append(col)
        if not columns:
            raise ValueError("make_table_options: a table needs at least one column")
        return {"columns": columns}
    if param is None:
        return {"initializer": None}
    return {"initializer": _check_initializer(param, "make_table_options' initializer")}


make_table = make_table_options


def _positive_int(name, value, allow_none=False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _common(persistent_path, capacity, size_factor, physical_block_size, capacity_optional):
    if isinstance(persistent_path, (list, tuple)):
        if not persistent_path or not all(isinstance(p, str) and p for p in persistent_path):
            raise ValueError("persistent_path must be a non-empty path, or a list of them (one per rank)")
        paths = list(persistent_path)
    elif isinstance(persistent_path, str) and persistent_path:
        paths = persistent_path
    else:
        raise ValueError(f"persistent_path must be a non-empty path, or a list of them (one per rank), "
                         f"got {persistent_path!r}")
    block = _positive_int("physical_block_size", physical_block_size)
    if block & (block - 1):
        raise ValueError(f"physical_block_size must be a power of two, got {block}")
    return {"persistent_path": paths, "capacity": _positive_int("capacity", capacity, capacity_optional),
            "size_factor": _positive_int("size_factor", size_factor), "physical_block_size": block}


def make_device_mem_store_options(persistent_path, capacity, size_factor=1, physical_block_size=4096):
    """Store options keeping every row in device memory (on a CPU build: host RAM).

    Args:
        persistent_path (str or list of str): where snapshots are saved; one folder per rank is made below a
            string path (``<rank>-<world_size>``), a list gives each rank's path.
        capacity (int): the most rows the embedding holds (all ranks together); a lookup of more distinct ids
            raises an error.
        size_factor (int): row width in units of ``embedding_dim``: 1 for SGD, 2 for SGD with momentum or
            Adagrad, 3 for Adam or Ftrl (4 for Adam with amsgrad).
        physical_block_size (int): block size of the persistent files (bytes, a power of two).
    """
    opts = _common(persistent_path, capacity, size_factor, physical_block_size, False)
    opts.update(kind="device_mem", cache_budget_mb=None)
    return opts


def make_cached_ssd_store_options(cache_budget_mb, persistent_path, capacity=None, size_factor=1,
                                  physical_block_size=4096, host_cache_budget_mb=0, background_write_back=False):
    """Store options keeping every row in files on SSD under ``persistent_path``, with an LRU cache in memory.

    Args:
        cache_budget_mb (int): memory of the cache, per rank, in MiB (on a CPU build the device cache and the
            host cache are both RAM, so the cache holds ``cache_budget_mb + host_cache_budget_mb``).
        persistent_path (str or list of str): folder of the row files and snapshots (see
            :func:`make_device_mem_store_options`).
        capacity (int, optional): the most rows the embedding holds; None: no limit but the disk.
        size_factor (int): row width in units of ``embedding_dim`` (see :func:`make_device_mem_store_options`).
        physical_block_size (int): rows are laid out so that none straddles two blocks of this size.
        host_cache_budget_mb (int): a second-level cache in host memory, in MiB.
        background_write_back (bool): write the row log's full segments (evicted rows, a few MiB at a time)
            from a background thread; off by default, as on a machine with few free cores the thread costs
            more than it saves (see bench/bench_embedding.py).
    """
    opts = _common(persistent_path, capacity, size_factor, physical_block_size, True)
    budget = _number("cache_budget_mb", cache_budget_mb) + _number("host_cache_budget_mb", host_cache_budget_mb)
    if budget <= 0:
        raise ValueError(f"cache_budget_mb must be positive, got {cache_budget_mb!r}")
    opts.update(kind="cached_ssd", cache_budget_mb=budget, background_write_back=bool(background_write_back))
    return opts


def make_cached_host_mem_store_options(cache_budget_mb, persistent_path, capacity, size_factor=1,
                                       physical_block_size=4096):
    """Store options keeping every row in host memory behind a device cache of ``cache_budget_mb`` MiB.

    On a CPU build the device cache and host memory are the same RAM, so every row stays in RAM (as
    :func:`make_device_mem_store_options`); ``capacity`` bounds the rows.
    """
    opts = _common(persistent_path, capacity, size_factor, physical_block_size, False)
    if _number("cache_budget_mb", cache_budget_mb) <= 0:
        raise ValueError(f"cache_budget_mb must be positive, got {cache_budget_mb!r}")
    opts.update(kind="cached_host_mem", cache_budget_mb=float(cache_budget_mb))
    return opts
