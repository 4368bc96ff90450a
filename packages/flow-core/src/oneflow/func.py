"""``oneflow.func`` (PyTorch's ``torch.func``): composable function transforms.

* ``grad``, ``grad_and_value``, ``vjp``, ``jacrev``, ``hessian``: reverse mode over ``oneflow.autograd``;
* ``jvp``, ``jacfwd``, ``linearize``: forward mode by the double-vjp trick (needs double-backward support);
* ``vmap``: a per-sample loop, not a batching-rule transform;
* ``functional_call``, ``stack_module_state``: run modules with given parameters, stack ensembles.

They compose (``grad(grad(f))``, ``vmap(grad(f))``, ``jacrev(jacrev(f))``, ``jvp`` of ``grad``), accept pytrees
of tensors (``oneflow.utils._pytree``), and neither need inputs that require grad nor write ``.grad``.
Implementation notes are in ``oneflow._functorch``.
"""
from ._functorch.eager_transforms import grad, grad_and_value, hessian, jacrev, vjp
from ._functorch.forward_transforms import jacfwd, jvp, linearize
from ._functorch.functional_call import stack_module_state
from ._functorch.vmap import vmap
from .nn.utils.stateless import _functional_call as functional_call

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "linearize", "vmap",
           "functional_call", "stack_module_state"]
