// The backward engine: topological execution of the graph from roots to leaves.
#pragma once
#include "node.h"

namespace flow::autograd {

// Runs backward from `roots` with `grad_roots` (undefined entries mean "ones" for scalars).
// With `inputs` empty, accumulates into leaves' .grad; otherwise returns the gradients w.r.t. `inputs`
// (autograd.grad) without touching .grad.
TensorList run_backward(const TensorList& roots, const TensorList& grad_roots, bool keep_graph, bool create_graph,
                        const TensorList& inputs, bool allow_unused);

}  // namespace flow::autograd
