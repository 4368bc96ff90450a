"""The function transforms behind ``oneflow.func`` (PyTorch's ``torch._functorch``).

Unlike torch's functorch, these are not built on tensor wrappers and dispatcher levels. The differentiation
transforms (``eager_transforms``: grad, vjp, jacrev, hessian; ``forward_transforms``: jvp, jacfwd, linearize)
run the function on differentiable copies of the inputs and use reverse-mode ``autograd.grad`` with
``create_graph=True``, forward mode by the double-vjp trick (``levels`` explains how nesting stays correct).
``vmap`` is a per-sample loop. See each module's docstring for the consequences.
"""
