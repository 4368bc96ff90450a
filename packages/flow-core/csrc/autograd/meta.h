// Per-tensor autograd state, allocated only for tensors that take part in autograd.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "../core/tensor.h"

namespace flow::autograd {

struct Node;
using TensorHook = std::function<Tensor(const Tensor&)>;  // returns a replacement grad or undefined

struct AutogradMeta {
  bool requires_grad = false;
  Tensor grad;
  std::shared_ptr<Node> grad_fn;
  uint32_t output_nr = 0;
  std::weak_ptr<Node> grad_accumulator;  // for leaves
  bool retains_grad = false;
  std::vector<TensorHook> leaf_hooks;    // hooks of a leaf, run before accumulation
  // hooks of a leaf called with the tensor once its .grad holds the accumulated gradient
  std::vector<std::function<void(const Tensor&)>> post_accumulate_hooks;
  // For a view with a history: the storage version its grad_fn was made at. An in-place write to the base
  // or to another view of it since then makes that history stale; grad_fn() then rebuilds it from the base.
  int64_t view_version = -1;
};

}  // namespace flow::autograd
