"""Python-level op wrappers, one module per family.

Each module may define ``__all__`` (names exported as ``oneflow.<name>``) and ``TENSOR_METHODS`` (a dict of
methods attached to ``oneflow.Tensor``). Modules are imported in name order by ``oneflow._registry_api``.
"""
