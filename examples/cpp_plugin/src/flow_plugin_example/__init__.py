"""An example C++ plugin for oneflow (see ``docs/cpp_plugins.md``).

Importing it loads ``libflow_plugin_example.so``, whose static initializers register into the core's registry:

* the op ``example_scaled_add(self, other, *, alpha=1.0)`` (``self + alpha * other`` with broadcasting): schema,
  meta function, CPU kernel, backward formula and traits, so it works with autograd, meta tensors and dispatch
  modes like any core op (``oneflow.ops.example_scaled_add``, ``Tensor.example_scaled_add``);
* a C++ tensor handler, ``example.counting``: ``example_tag(t)`` returns an alias of ``t`` tagged with the
  handler's key; every op on a tagged tensor is then routed to the handler (no Python per op), which counts it,
  runs the op on the untagged tensors and tags the results. ``example_handler_calls()`` returns the count;
* ``example_misread_attr``, whose kernel reads an attribute its schema lacks: the RuntimeError that gives.
"""
import os

import oneflow as flow

LIBRARY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libflow_plugin_example.so")
OPS = flow.ops.load_library(LIBRARY)


def scaled_add(input, other, alpha=1.0):
    r"""``input + alpha * other``, broadcasting (the plugin's registry op ``example_scaled_add``)."""
    return flow.ops.example_scaled_add(input, other, alpha=alpha)


def tag(t):
    """An alias of ``t`` that the plugin's C++ handler intercepts."""
    return flow.ops.example_tag(t)


def handler_calls():
    """How many ops the plugin's C++ handler has intercepted."""
    return int(flow.ops.example_handler_calls().item())
