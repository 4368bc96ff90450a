"""The post-accumulate-grad hooks of each live tensor, by id: ``backward(inputs=...)`` accumulates in Python, out
of the engine's reach, and runs these itself (``Tensor.register_post_accumulate_grad_hook`` adds to them). An
entry goes with its tensor. A leaf module, shared by ``_tensor`` and ``autograd`` without either importing the
other."""
import weakref

_post_accumulate_hooks = {}


def _python_post_accumulate_hooks(tensor, create=False):
    hooks = _post_accumulate_hooks.get(id(tensor))
    if hooks is None:
        if not create:
            return ()
        hooks = _post_accumulate_hooks[id(tensor)] = []
        weakref.finalize(tensor, _post_accumulate_hooks.pop, id(tensor), None)
    return hooks
