// Tensor's autograd accessors.
#include "meta.h"

#include "grad_mode.h"
#include "node.h"

namespace flow {

static const std::shared_ptr<autograd::Node> kNoNode;

bool Tensor::requires_grad() const {
  auto* m = impl_->autograd.get();
  return m && (m->requires_grad || m->grad_fn);
}

void Tensor::set_requires_grad(bool r) const {
  auto* m = impl_->autograd.get();
  if (m && m->grad_fn) {
    FLOW_RUNTIME_CHECK(r,
                       "you can only change requires_grad flags of leaf variables. If you want to use a "
                       "computed variable in a subgraph that doesn't require differentiation use "
                       "var_no_grad = var.detach().");
    return;
  }
  if (r) {
    FLOW_RUNTIME_CHECK(is_floating(impl_->dtype), "only Tensors of floating point dtype can require gradients (got ",
                       dtype_name(impl_->dtype), ")");
    FLOW_RUNTIME_CHECK(!impl_->is_inference || autograd::InferenceMode::is_enabled(),
                       "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.");
  }
  if (!m && !r) return;
  autograd_meta().requires_grad = r;
}

const std::shared_ptr<autograd::Node>& Tensor::grad_fn() const {
  auto* m = impl_->autograd.get();
  if (!m) return kNoNode;
  if (m->view_version >= 0 && impl_->base && m->view_version != version()) autograd::regenerate_view_history(*this);
  return m->grad_fn;
}

bool Tensor::is_leaf() const { return grad_fn() == nullptr; }

autograd::AutogradMeta& Tensor::autograd_meta() const {
  if (!impl_->autograd) impl_->autograd = std::make_unique<autograd::AutogradMeta>();
  return *impl_->autograd;
}

}  // namespace flow
