"""Python pytrees (PyTorch's ``torch.utils._pytree``): nested containers flattened to a list of leaves plus a
``TreeSpec`` that rebuilds the structure.

tuples, lists, dicts (in insertion order), ``OrderedDict``, ``defaultdict``, ``deque`` and namedtuples are
containers; everything else (tensors, numbers, ``None``, strings) is a leaf. More container types can be added
with ``register_pytree_node``. The function transforms of ``oneflow.func`` use this to accept and return
arbitrary nestings of tensors.
"""
from collections import OrderedDict, defaultdict, deque, namedtuple

__all__ = ["TreeSpec", "LeafSpec", "register_pytree_node", "tree_flatten", "tree_unflatten", "tree_leaves",
           "tree_structure", "tree_map", "tree_map_", "tree_map_only", "tree_all", "tree_any", "treespec_pprint"]

# type -> (flatten: node -> (children, context), unflatten: (children, context) -> node)
SUPPORTED_NODES = {}


def register_pytree_node(cls, flatten_fn, unflatten_fn):
    """Makes ``cls`` a container: ``flatten_fn(node) -> (children, context)`` and
    ``unflatten_fn(children, context) -> node``."""
    SUPPORTED_NODES[cls] = (flatten_fn, unflatten_fn)


def _is_namedtuple_instance(obj):
    return isinstance(obj, tuple) and hasattr(type(obj), "_fields")


register_pytree_node(tuple, lambda t: (list(t), None), lambda c, _: tuple(c))
register_pytree_node(list, lambda t: (list(t), None), lambda c, _: list(c))
register_pytree_node(dict, lambda d: (list(d.values()), list(d.keys())), lambda c, keys: dict(zip(keys, c)))
register_pytree_node(OrderedDict, lambda d: (list(d.values()), list(d.keys())),
                     lambda c, keys: OrderedDict(zip(keys, c)))
register_pytree_node(defaultdict, lambda d: (list(d.values()), (d.default_factory, list(d.keys()))),
                     lambda c, ctx: defaultdict(ctx[0], zip(ctx[1], c)))
register_pytree_node(deque, lambda d: (list(d), d.maxlen), lambda c, maxlen: deque(c, maxlen=maxlen))
# namedtuples share one entry: the context is the concrete class
register_pytree_node(namedtuple, lambda t: (list(t), type(t)), lambda c, cls: cls(*c))


def _node_type(obj):
    """The registered container type of ``obj``, or None for a leaf (subclasses of the built-in containers are
    leaves unless registered themselves, except namedtuples)."""
    typ = type(obj)
    if typ in SUPPORTED_NODES:
        return typ
    return namedtuple if _is_namedtuple_instance(obj) else None


class TreeSpec:
    """The structure of a pytree: a container type, its context (keys, class, ...) and the specs of its
    children. ``num_leaves`` counts the leaves below."""

    def __init__(self, type, context, children_specs):
        self.type = type
        self.context = context
        self.children_specs = list(children_specs)
        self.num_leaves = sum(c.num_leaves for c in self.children_specs)
        self.num_children = len(self.children_specs)

    def is_leaf(self):
        return False

    def __eq__(self, other):
        if not isinstance(other, TreeSpec) or self.is_leaf() != other.is_leaf():
            return False
        return (self.type is other.type and self.context == other.context
                and self.children_specs == other.children_specs)

    def __hash__(self):
        return hash((self.type, len(self.children_specs)))

    def __repr__(self):
        name = "namedtuple" if self.type is namedtuple else self.type.__name__
        context = self.context.__name__ if isinstance(self.context, type) else repr(self.context)
        return f"TreeSpec({name}, {context}, [{', '.join(repr(c) for c in self.children_specs)}])"

    def unflatten(self, leaves):
        return tree_unflatten(leaves, self)


class LeafSpec(TreeSpec):
    """The spec of a single leaf (printed ``*``)."""

    def __init__(self):
        super().__init__(None, None, [])
        self.num_leaves = 1

    def is_leaf(self):
        return True

    def __eq__(self, other):
        return isinstance(other, LeafSpec)

    def __hash__(self):
        return 0

    def __repr__(self):
        return "*"


def tree_flatten(tree, is_leaf=None):
    """(list of leaves in depth-first order, TreeSpec). ``is_leaf(node)`` may stop the descent early."""
    leaves = []

    def flatten(node):
        typ = None if is_leaf is not None and is_leaf(node) else _node_type(node)
        if typ is None:
            leaves.append(node)
            return LeafSpec()
        children, context = SUPPORTED_NODES[typ][0](node)
        return TreeSpec(typ, context, [flatten(c) for c in children])

    spec = flatten(tree)
    return leaves, spec


def tree_unflatten(leaves, treespec):
    """Rebuilds the pytree described by ``treespec`` from ``leaves``."""
    leaves = list(leaves)
    if len(leaves) != treespec.num_leaves:
        raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the spec refers to a "
                         f"pytree that holds {treespec.num_leaves} items ({treespec}).")
    it = iter(leaves)

    def build(spec):
        if spec.is_leaf():
            return next(it)
        return SUPPORTED_NODES[spec.type][1]([build(c) for c in spec.children_specs], spec.context)

    return build(treespec)


def tree_leaves(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[1]


def tree_map(func, tree, *rests, is_leaf=None):
    """Applies ``func`` to every leaf (to matching leaves of ``rests`` too, which must have ``tree``'s
    structure) and returns a pytree of the same structure."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = []
    for rest in rests:
        r_leaves, r_spec = tree_flatten(rest, is_leaf)
        if r_spec != spec:
            raise ValueError(f"Tree structures do not match: {spec} vs {r_spec}")
        others.append(r_leaves)
    return tree_unflatten([func(*xs) for xs in zip(leaves, *others)], spec)


def tree_map_(func, tree, *rests, is_leaf=None):
    """``tree_map`` for the side effects of ``func``; returns ``tree``."""
    tree_map(func, tree, *rests, is_leaf=is_leaf)
    return tree


def tree_map_only(type_or_types, func, tree, is_leaf=None):
    """``tree_map`` applying ``func`` only to leaves that are instances of ``type_or_types``."""
    return tree_map(lambda x: func(x) if isinstance(x, type_or_types) else x, tree, is_leaf=is_leaf)


def tree_all(pred, tree, is_leaf=None):
    return all(pred(x) for x in tree_leaves(tree, is_leaf))


def tree_any(pred, tree, is_leaf=None):
    return any(pred(x) for x in tree_leaves(tree, is_leaf))


def treespec_pprint(treespec):
    """A compact picture of a spec: ``(*, [*, *])`` for a tuple of a leaf and a two-leaf list."""
    if treespec.is_leaf():
        return "*"
    inner = ", ".join(treespec_pprint(c) for c in treespec.children_specs)
    if treespec.type in (tuple, namedtuple):
        return f"({inner},)" if treespec.num_children == 1 else f"({inner})"
    if treespec.type is list:
        return f"[{inner}]"
    if treespec.type in (dict, OrderedDict, defaultdict):
        return "{" + ", ".join(f"{k!r}: {treespec_pprint(c)}" for k, c in
                               zip(_dict_keys(treespec), treespec.children_specs)) + "}"
    return f"{treespec.type.__name__}({inner})"


def _dict_keys(treespec):
    return treespec.context[1] if treespec.type is defaultdict else treespec.context


def _broadcast_to_and_flatten(tree, treespec):
    """Flattens ``tree`` (a prefix of the structure ``treespec``: a leaf stands for a whole subtree) to one value
    per leaf of ``treespec``; None when ``tree`` is not such a prefix. vmap reads ``in_dims``/``out_dims`` so."""
    if treespec.is_leaf():
        return [tree]
    if _node_type(tree) is None:
        return [tree] * treespec.num_leaves
    if _node_type(tree) is not treespec.type:
        return None
    children, context = SUPPORTED_NODES[treespec.type][0](tree)
    if len(children) != treespec.num_children or context != treespec.context:
        return None
    out = []
    for child, child_spec in zip(children, treespec.children_specs):
        flat = _broadcast_to_and_flatten(child, child_spec)
        if flat is None:
            return None
        out.extend(flat)
    return out

