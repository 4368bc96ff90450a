"""``graph.state_dict()`` / ``graph.load_state_dict()``: the graph's modules and optimizers' state by name.

Keys follow OneFlow's graph state dict: each module of the graph under its attribute name, holding that module's
own ``state_dict()``; then one flat entry per optimizer state tensor, named after the parameter it belongs to and
the state's key (``model.0.weight-exp_avg``, ``model.0.weight-step``), as OneFlow names its optimizer variables
(``<variable>-<state>``); and the grad scaler's ``scale`` and ``growth_tracker`` when one is set.

Loading validates everything first (keys, types, shapes) and only then copies, so a bad state dict leaves the
graph as it was. Tensors are copied into the existing ones where they exist, so compiled plans, which are bound
to those tensors, see the loaded values.
"""
from collections import OrderedDict
from collections.abc import Mapping

import oneflow as flow

def param_names(graph):
    """``{id(param): name}`` for the parameters of the graph's modules and optimizers (``model.0.weight``; a
    parameter that no module holds is ``optimizer<k>.param<i>``)."""
    names = {}
    for prefix, m in graph._modules.items():
        for n, p in m.named_parameters(prefix):
            names.setdefault(id(p), n)
    for k, (opt, _) in enumerate(graph._opts):
        for i, p in enumerate(p for g in opt.param_groups for p in g["params"]):
            names.setdefault(id(p), f"optimizer{k}.param{i}")
    return names


def _params_by_name(graph):
    names = param_names(graph)
    out = {}
    for k, (opt, _) in enumerate(graph._opts):
        for group in opt.param_groups:
            for p in group["params"]:
                out.setdefault(names[id(p)], (opt, p, group))
    return out


def optimizer_state(graph):
    """``[(key, optimizer, param, state key, tensor)]`` for every tensor of the added optimizers' state."""
    names = param_names(graph)
    out = []
    for opt, _ in graph._opts:
        for p, state in opt.state.items():
            for skey, t in state.items():
                if isinstance(t, flow.Tensor) and isinstance(p, flow.Tensor):
                    out.append((f"{names.get(id(p), 'param')}-{skey}", opt, p, skey, t))
    return out


def scaler_state(graph):
    """``[(key, tensor)]`` of the graph's grad scaler (empty without one or before its tensors exist)."""
    scaler = graph.__dict__.get("_grad_scaler")
    if scaler is None or getattr(scaler, "_scale", None) is None:
        return []
    return [("grad_scaler.scale", scaler._scale), ("grad_scaler.growth_tracker", scaler._growth_tracker)]


def named_tensors(graph):
    """``{name: tensor}`` of everything a compiled graph may bind as a variable by name: the modules'
    parameters and buffers (``model.0.weight``), the optimizers' state, their lr tensors
    (``optimizer<k>.group<i>.lr``) and the grad scaler's tensors."""
    out = {}
    for prefix, m in graph._modules.items():
        for n, t in m.named_parameters(prefix):
            out.setdefault(n, t)
        for n, t in m.named_buffers(prefix):
            out.setdefault(n, t)
    for key, _, _, _, t in optimizer_state(graph):
        out.setdefault(key, t)
    for k, (opt, _) in enumerate(graph._opts):
        for i, group in enumerate(opt.param_groups):
            out.setdefault(f"optimizer{k}.group{i}.lr", opt._lr_tensor(i, group))
    for key, t in scaler_state(graph):
        out.setdefault(key, t)
    return out


def state_dict(graph):
    dest = OrderedDict()
    dest._metadata = OrderedDict()
    for name, m in graph._modules.items():
        dest[name] = m.state_dict()
    for key, _, _, _, t in optimizer_state(graph):
        dest[key] = t.detach()
    for key, t in scaler_state(graph):
        dest[key] = t.detach()
    return dest


def _check_tensor(key, value, shape, errors):
    if not isinstance(value, flow.Tensor):
        errors.append(f'"{key}": expected a Tensor, but got {type(value).__name__}')
        return False
    if shape is not None and tuple(value.shape) != tuple(shape):
        errors.append(f"size mismatch for {key}: copying a tensor with shape {tuple(value.shape)} from the state "
                      f"dict, the shape in the current graph is {tuple(shape)}")
        return False
    return True


def plan_load(graph, sd, strict=True):
    """Checks ``sd`` against ``graph`` without changing anything; returns the list of loading actions, or raises
    ``RuntimeError`` listing every problem."""
    if not isinstance(sd, Mapping):
        raise TypeError(f"{graph.name}.load_state_dict(): expected a dict, but got {type(sd).__name__}")
    errors, missing, unexpected, actions = [], [], [], []
    for name, m in graph._modules.items():
        sub = sd.get(name)
        if sub is None:
            if strict:
                missing.append(name)
            continue
        if not isinstance(sub, Mapping):
            errors.append(f'"{name}": expected the state dict of module {name} (a dict), but got '
                          f"{type(sub).__name__}")
            continue
        own = m.state_dict(keep_vars=True)
        for k, t in own.items():
            if k not in sub:
                if strict:
                    missing.append(f"{name}.{k}")
            else:
                _check_tensor(f"{name}.{k}", sub[k], t.shape, errors)
        if strict:
            unexpected += [f"{name}.{k}" for k in sub if k not in own]
        actions.append(("module", m, sub))
    existing = {key: (opt, p, skey, t) for key, opt, p, skey, t in optimizer_state(graph)}
    params = _params_by_name(graph)
    scaler = dict(scaler_state(graph))
    for key, value in sd.items():
        if key in graph._modules:
            continue
        if key in existing:
            opt, p, skey, t = existing[key]
            if _check_tensor(key, value, t.shape, errors):
                actions.append(("copy", t, value))
        elif key in scaler:
            if _check_tensor(key, value, scaler[key].shape, errors):
                actions.append(("copy", scaler[key], value))
        elif key.rpartition("-")[0] in params:  # state the optimizer has not made yet (no step so far)
            opt, p, group = params[key.rpartition("-")[0]]
            if _check_tensor(key, value, None, errors):
                actions.append(("new", opt, p, group, key.rpartition("-")[2], value))
        elif strict:
            unexpected.append(key)
    if strict:
        missing += [key for key in existing if key not in sd]
        missing += [key for key in scaler if key not in sd]
    if unexpected:
        errors.insert(0, "Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ".")
    if missing:
        errors.insert(0, "Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ".")
    if errors:
        raise RuntimeError(f"Error(s) in loading state_dict for {graph.name} (nothing was loaded):\n\t"
                           + "\n\t".join(errors))
    return actions


def apply_load(graph, actions, strict=True, take=False):
    """Runs the actions of :func:`plan_load`. Optimizer state that does not exist yet is made from copies of the
    given tensors, or from the tensors themselves with ``take`` (a state dict nobody else holds, fresh from a
    file). Returns whether new tensors were made (compiled plans do not see those: the graph must compile
    again)."""
    made = False
    with flow.no_grad():
        for a in actions:
            if a[0] == "module":
                a[1].load_state_dict(a[2], strict=strict)
            elif a[0] == "copy":
                a[1].copy_(a[2])
            else:
                _, opt, p, group, skey, value = a
                t = type(opt)._cast_state_value(p, value.detach(), skey, group)
                opt.state.setdefault(p, {})[skey] = t if take else t.clone()
                made = True
    return made
