"""The bookkeeping that weight_norm and spectral_norm share: one reparametrizing pre-hook per parameter."""


def check_unregistered(module, cls, name, what):
    """Raises if ``module`` already has a ``cls`` pre-hook for parameter ``name``."""
    for hook in module._forward_pre_hooks.values():
        if isinstance(hook, cls) and hook.name == name:
            raise RuntimeError(f"Cannot register two {what} hooks on the same parameter {name}")


def remove(module, cls, name, what):
    """Undoes ``module``'s ``cls`` pre-hook for parameter ``name`` (its ``remove``) and drops the hook."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, cls) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"{what} of '{name}' not found in {module}")
