// Autograd graph nodes. A Node turns gradients w.r.t. its forward outputs into gradients w.r.t. its
// forward inputs; `next_edges[i]` says where the gradient of input i goes.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "../ops/registry.h"
#include "meta.h"

namespace flow::autograd {

struct Edge {
  std::shared_ptr<Node> fn;
  uint32_t input_nr = 0;
  bool valid() const { return fn != nullptr; }
};

struct InputMeta {
  Shape sizes;
  DType dtype = DType::Float32;
  Device device;
  bool defined = false;
};

// What a saved-tensor pack hook made of a tensor, and the way back (its unpack hook).
struct PackedTensor {
  virtual ~PackedTensor() = default;
  virtual Tensor unpack() const = 0;
};
// torch.autograd.graph.saved_tensors_hooks: while a pack hook is installed on this thread, every tensor an
// op saves for backward goes through the innermost one, and only what it returns is kept.
using PackHook = std::function<std::shared_ptr<PackedTensor>(const Tensor&)>;
void push_pack_hook(PackHook h);
void pop_pack_hook();
bool pack_hook_active();  // a hook is installed and none is running on this thread

// A tensor kept for backward, with the version it had when saved.
struct SavedTensor {
  Tensor data;  // shares storage; for saved outputs, carries no autograd meta (avoids a cycle)
  std::shared_ptr<PackedTensor> packed;  // instead of data, under a pack hook (no version check then)
  // A packed input that required grad: where its gradient went (its grad_fn, or its AccumulateGrad if a
  // leaf), re-attached to what unpack returns, so that second derivatives through it stay connected.
  std::shared_ptr<Node> history;
  uint32_t history_nr = 0;
  bool history_is_leaf = false;
  int64_t version = 0;
  bool is_output = false;
  bool was_requires_grad = false;
  uint32_t output_nr = 0;
  bool released = false;

  static SavedTensor save(const Tensor& t, bool is_output);
  void release();  // drop what it keeps; a later unpack raises the "backward a second time" error
  // Check the version and rebuild the tensor (re-attaching `owner` as grad_fn for saved outputs).
  Tensor unpack(const std::shared_ptr<Node>& owner, const char* node_name) const;
};

uint64_t next_sequence_nr();

struct Node : std::enable_shared_from_this<Node> {
  uint64_t seq = next_sequence_nr();
  std::vector<Edge> next_edges;
  std::vector<InputMeta> input_meta;          // one per forward input
  uint32_t num_outputs = 1;                    // forward outputs (grads this node receives)
  std::vector<std::vector<TensorHook>> pre_hooks;  // per forward output
  std::vector<TensorHook> retain_hooks;            // per forward output; run after pre_hooks (retain_grad)
  // Node.register_prehook: all incoming grads at once, may replace them; Node.register_hook: called with the
  // grads this node computed and those it received, may replace the computed ones
  std::vector<std::function<void(TensorList& grad_outputs)>> node_pre_hooks;
  std::vector<std::function<void(TensorList& grad_inputs, const TensorList& grad_outputs)>> post_hooks;

  virtual ~Node() = default;
  virtual TensorList apply(TensorList&& grad_outputs) = 0;
  virtual std::string name() const = 0;
  virtual void release_saved() {}
  void add_pre_hook(uint32_t output_nr, TensorHook h);
};

// Backward of a registry op.
struct OpNode : Node {
  const OpDef* op = nullptr;
  Attrs attrs;
  std::vector<SavedTensor> saved_inputs;   // aligned with op->saved_inputs
  std::vector<SavedTensor> saved_outputs;  // aligned with op->saved_outputs
  std::vector<bool> needs_input_grad;
  bool released = false;

  TensorList apply(TensorList&& grad_outputs) override;
  std::string name() const override;  // op_title() + "Backward0"
  std::string op_title() const;       // the op's name in PyTorch's node spelling: split_with_sizes -> SplitWithSizes
  void release_saved() override;
};

// Sink for a leaf: accumulates into .grad.
struct AccumulateGrad : Node {
  std::shared_ptr<TensorImpl> variable;
  TensorList apply(TensorList&& grad_outputs) override;
  std::string name() const override { return "AccumulateGrad"; }
};

}  // namespace flow::autograd

namespace flow {
// Handed to an op's backward formula.
struct BackwardCtx {
  using OpNode = autograd::OpNode;
  using InputMeta = autograd::InputMeta;
  OpNode* node;
  const Attrs& attrs;
  // i-th *saved* input/output, by position in the forward input/output list.
  Tensor input(int i) const;
  Tensor output(int i) const;
  bool needs(int i) const { return i < static_cast<int>(node->needs_input_grad.size()) && node->needs_input_grad[i]; }
  const InputMeta& input_meta(int i) const { return node->input_meta.at(i); }
  size_t num_inputs() const { return node->input_meta.size(); }
};
}  // namespace flow

namespace flow::autograd {

// The edge a gradient w.r.t. `t` must flow to (its grad_fn, or its AccumulateGrad if a leaf).
Edge gradient_edge(const Tensor& t);
// Record `op` applied to `inputs` producing `outputs` (sets grad_fn on differentiable outputs).
void record_op(const OpDef& op, const TensorList& inputs, const Attrs& attrs, TensorList& outputs,
               const TensorList* inplace_saved_self = nullptr);
// Attach an existing node as grad_fn of `outputs` (for Python custom functions).
void set_history(TensorList& outputs, const std::shared_ptr<Node>& node);
// A view whose base (or another view of it) was written in place after the view's history was made: its
// history becomes "this region of the base as it is now" (PyTorch regenerates a view's grad_fn the same way).
void regenerate_view_history(const Tensor& view);

}  // namespace flow::autograd

