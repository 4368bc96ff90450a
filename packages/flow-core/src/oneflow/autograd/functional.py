"""``oneflow.autograd.functional`` (PyTorch's ``torch.autograd.functional``): vjp, jvp, vhp, hvp, jacobian and
hessian of a Python function of tensors, built on ``autograd.grad``. jvp and hvp use the double-backward
trick (the gradient of a vjp with respect to its vector); Jacobians are assembled one row (reverse mode) or
one column (forward mode) at a time, which ``vectorize=True`` also does here, with the same results."""
from .. import _C
from ._engine import grad as _grad
from .grad_mode import enable_grad

__all__ = ["vjp", "jvp", "vhp", "hvp", "jacobian", "hessian"]


def _zeros_like(t):
    return t.detach().new_zeros(t.shape)


def _as_tuple(x, arg_name, fn_name):
    """(was a tuple, tuple of tensors), with torch's TypeError for anything else."""
    is_tuple = isinstance(x, tuple)
    items = x if is_tuple else (x,)
    for i, el in enumerate(items):
        if not isinstance(el, _C.TensorBase):
            got = f"the value at index {i}" if is_tuple else f"the given {arg_name}"
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but "
                            f"{got} has type {type(el)}.")
    return is_tuple, items


def _tuple_postprocess(res, to_unpack):
    """Unpacks the one-element tuples of arguments that were single tensors (nested for Jacobians)."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs, create_graph, need_graph):
    """Fresh leaves (or, for create_graph, views that stay connected to an outer graph)."""
    if create_graph:
        return tuple(t.view_as(t) if t.requires_grad else t.detach().requires_grad_(need_graph) for t in inputs)
    return tuple(t.detach().requires_grad_(need_graph) for t in inputs)


def _grad_postprocess(outputs, create_graph):
    if isinstance(outputs[0], tuple):
        return tuple(_grad_postprocess(o, create_graph) for o in outputs)
    return outputs if create_graph else tuple(o.detach() for o in outputs)


def _validate_v(v, other, is_other_tuple):
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if tuple(el_v.shape) != tuple(el_other.shape):
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(f"{prepend}v has invalid size: should be {el_other.shape} but got {el_v.shape}.")


_STRICT_NO_GRAD = {
    "outputs": "Output {} of the user-provided function does not require gradients. The outputs must be computed "
               "in a differentiable manner from the input when running in strict mode.",
    "hessian": "The hessian of the user-provided function with respect to input {} is independent of the input. "
               "This is not allowed in strict mode. You should ensure that your function is thrice "
               "differentiable and that the hessian depends on the inputs.",
    "jacobian": "While computing the hessian, found that the jacobian of the user-provided function with respect "
                "to input {} is independent of the input. This is not allowed in strict mode. You should ensure "
                "that your function is twice differentiable and that the jacobian depends on the inputs (this "
                "would be violated by a linear function for example).",
    "grad_inputs": "The gradient with respect to input {} is independent of the inputs of the user-provided "
                   "function. This is not allowed in strict mode.",
}


def _check_requires_grad(tensors, kind, strict):
    if not strict:
        return
    for i, t in enumerate(tensors):
        if t is None:
            raise RuntimeError(f"The output of the user-provided function is independent of input {i}. This is not "
                               "allowed in strict mode.")
        if not t.requires_grad:
            raise RuntimeError(_STRICT_NO_GRAD[kind].format(i))


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """autograd.grad over the outputs that require grad (None for every input when none do)."""
    grad_outputs = grad_outputs or (None,) * len(outputs)
    outs, gouts = [], []
    for o, g in zip(outputs, grad_outputs):
        if o is not None and o.requires_grad:
            outs.append(o)
            gouts.append(g)
    if not outs:
        return (None,) * len(inputs)
    return _grad(outs, inputs, gouts, allow_unused=True, create_graph=create_graph, retain_graph=retain_graph)


_STRICT_ZERO = {
    "back": "The output of the user-provided function is independent of input {}. This is not allowed in strict "
            "mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {} in the grad_outputs when "
                  "using the double backward trick to compute forward mode gradients. This is not allowed in "
                  "strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {}. This is not allowed in "
                   "strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {} in the grad_jacobian. "
                         "This is not allowed in strict mode as it prevents from using the double backward trick to "
                         "replace forward mode AD.",
}


def _fill_in_zeros(grads, refs, strict, create_graph, stage):
    res = []
    for i, (g, ref) in enumerate(zip(grads, refs)):
        if g is None:
            if strict:
                raise RuntimeError(_STRICT_ZERO[stage].format(i))
            g = _zeros_like(ref)
        elif strict and create_graph and not g.requires_grad:
            raise RuntimeError(_STRICT_ZERO[stage].format(i))
        res.append(g)
    return tuple(res)


def _single_element_v(v, tensors, fn_name, what, create_graph, is_tuple):
    if v is not None:
        _, v = _as_tuple(v, "v", fn_name)
        v = _grad_preprocess(v, create_graph, need_graph=False)
        _validate_v(v, tensors, is_tuple)
        return v
    if len(tensors) != 1 or tensors[0].numel() != 1:
        raise RuntimeError(f"The vector v can only be None if {what} is a single Tensor with a single element.")
    return None


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): the vector-Jacobian product of ``func`` at ``inputs`` for the vector ``v``
    (shaped like the outputs; may be omitted for a single one-element output)."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, create_graph, need_graph=True)
        is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "vjp")
        _check_requires_grad(outputs, "outputs", strict)
        if v is None and (len(outputs) != 1 or outputs[0].numel() != 1):
            raise RuntimeError("The vector v can only be None if the user-provided function returns a single "
                               "Tensor with a single element.")
        if v is not None:
            _, v = _as_tuple(v, "v", "vjp")
            v = _grad_preprocess(v, create_graph, need_graph=False)
            _validate_v(v, outputs, is_outputs_tuple)
        grad_res = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, inputs, strict, create_graph, "back")
    return (_tuple_postprocess(_grad_postprocess(outputs, create_graph), is_outputs_tuple),
            _tuple_postprocess(_grad_postprocess(res, create_graph), is_inputs_tuple))


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): the Jacobian-vector product for the vector ``v`` (shaped like the inputs; may be
    omitted for a single one-element input)."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _grad_preprocess(inputs, create_graph, need_graph=True)
        v = _single_element_v(v, inputs, "jvp", "the input to the user-provided function", create_graph,
                              is_inputs_tuple)
        is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "jvp")
        _check_requires_grad(outputs, "outputs", strict)
        # the double-backward trick: u -> J^T u is linear in u, and its gradient with respect to u, taken
        # against v, is J v
        grad_outputs = tuple(_zeros_like(o).requires_grad_(True) for o in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict)
        grad_res = _autograd_grad(grad_inputs, grad_outputs, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, outputs, strict, create_graph, "back_trick")
    return (_tuple_postprocess(_grad_postprocess(outputs, create_graph), is_outputs_tuple),
            _tuple_postprocess(_grad_postprocess(res, create_graph), is_outputs_tuple))


def _stack(tensors, dim):
    return _C.ops.cat([_C.ops.unsqueeze(t, dim) for t in tensors], dim)


def _flat_rows(t):
    return t.reshape(-1) if t.dim() else t.reshape(1)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: for output i and input j a tensor of shape
    ``outputs[i].shape + inputs[j].shape``, nested in tuples as the outputs and inputs are.
    ``strategy='forward-mode'`` (with ``vectorize=True``, as in torch) builds it column by column."""
    if strategy not in ("forward-mode", "reverse-mode"):  # an AssertionError, as in torch
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your function '
                         'has more outputs than inputs, "forward-mode" tends to be more performant. Otherwise, prefer '
                         'to use "reverse-mode".')
    if strict and vectorize:
        raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not "
                           "supported together. Please either set `strict=False` or `vectorize=False`.")
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError('torch.autograd.functional.jacobian: `create_graph=True` and '
                                      '`strategy="forward-mode"` are not supported together (yet). Please either '
                                      'set `create_graph=False` or `strategy="reverse-mode"`.')
        if not vectorize:
            raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse Hessian is"
                                      "only implemented for `vectorize=True`.")
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph, need_graph=True)
        is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "jacobian")
        _check_requires_grad(outputs, "outputs", strict)
        if strategy == "forward-mode":
            jac = _jacobian_columns(outputs, inputs, strict)
        else:
            jac = _jacobian_rows(outputs, inputs, create_graph, strict)
    return _tuple_postprocess(_grad_postprocess(jac, create_graph), (is_outputs_tuple, is_inputs_tuple))


def _jacobian_rows(outputs, inputs, create_graph, strict):
    jac = []
    for i, out in enumerate(outputs):
        flat = _flat_rows(out)
        rows = [[] for _ in inputs]
        for j in range(flat.numel()):
            g = _autograd_grad((flat[j],), inputs, retain_graph=True, create_graph=create_graph)
            for k, (gk, inp) in enumerate(zip(g, inputs)):
                if gk is None:
                    if strict:
                        raise RuntimeError(f"Output {i} of the user-provided function is independent of input {k}. "
                                           "This is not allowed in strict mode.")
                    gk = _zeros_like(inp)
                rows[k].append(gk)
        jac.append(tuple(_stack_as(rows[k], out.shape, inp.shape, inp) for k, inp in enumerate(inputs)))
    return tuple(jac)


def _jacobian_columns(outputs, inputs, strict):
    """J column by column: jvp with each unit vector of each input, through the double-backward trick."""
    grad_outputs = tuple(_zeros_like(o).requires_grad_(True) for o in outputs)
    grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
    cols = [[[] for _ in inputs] for _ in outputs]
    for k, inp in enumerate(inputs):
        for j in range(max(inp.numel(), 0)):
            unit = _flat_rows(_zeros_like(inp))
            unit[j] = 1.0
            if grad_inputs[k] is None:
                res = (None,) * len(outputs)
            else:
                res = _autograd_grad((grad_inputs[k],), grad_outputs, (unit.reshape(inp.shape),), retain_graph=True)
            for i, (r, out) in enumerate(zip(res, outputs)):
                if r is None:
                    if strict:
                        raise RuntimeError(f"Output {i} of the user-provided function is independent of input {k}. "
                                           "This is not allowed in strict mode.")
                    r = _zeros_like(out)
                cols[i][k].append(_flat_rows(r))
    jac = []
    for i, out in enumerate(outputs):
        per_input = []
        for k, inp in enumerate(inputs):
            shape = tuple(out.shape) + tuple(inp.shape)
            if not cols[i][k]:  # an input with no elements
                per_input.append(out.detach().new_zeros(shape))
                continue
            per_input.append(_stack(cols[i][k], 1).reshape(shape))  # (out elements, in elements)
        jac.append(tuple(per_input))
    return tuple(jac)


def _stack_as(rows, out_shape, in_shape, ref):
    shape = tuple(out_shape) + tuple(in_shape)
    if not rows:  # an output with no elements
        return ref.detach().new_zeros(shape)
    return _stack(rows, 0).reshape(shape)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar function: for inputs i and j a tensor of shape ``inputs[i].shape +
    inputs[j].shape``, nested as the inputs are."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def single_output(*inp):
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict)
        if is_out_tuple:
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should contain a single "
                               "element")
        return out.squeeze()

    def jac_func(*inp):
        jac = jacobian(single_output, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                   strategy=outer_jacobian_strategy)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def _scalar_output(func, inputs, fn_name, strict):
    is_out_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", fn_name)
    _check_requires_grad(outputs, "outputs", strict)
    if is_out_tuple:
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should contain a single element")
    return outputs


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H): the vector-Hessian product of a scalar function."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vhp")
        inputs = _grad_preprocess(inputs, create_graph, need_graph=True)
        v = _single_element_v(v, inputs, "vhp", "the input to the user-provided function", create_graph,
                              is_inputs_tuple)
        outputs = _scalar_output(func, inputs, "vhp", strict)
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        grad_res = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back")
    return (_grad_postprocess(outputs, create_graph)[0],
            _tuple_postprocess(_grad_postprocess(res, create_graph), is_inputs_tuple))


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v): the Hessian-vector product of a scalar function (equal to vhp's for twice
    continuously differentiable functions; computed with the double-backward trick)."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hvp")
        inputs = _grad_preprocess(inputs, create_graph, need_graph=True)
        v = _single_element_v(v, inputs, "hvp", "the input to the user-provided function", create_graph,
                              is_inputs_tuple)
        outputs = _scalar_output(func, inputs, "hvp", strict)
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        grad_jac = tuple(_zeros_like(t).requires_grad_(True) for t in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(double_back, "hessian", strict)
        grad_res = _autograd_grad(double_back, grad_jac, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back_trick")
    return (_grad_postprocess(outputs, create_graph)[0],
            _tuple_postprocess(_grad_postprocess(res, create_graph), is_inputs_tuple))
