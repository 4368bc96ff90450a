// oneflow._C's autocast controls: the thread-local state and the op policy table (see dispatch/autocast.h).
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include "../dispatch/autocast.h"
#include "../ops/amp.h"

#include "bind.h"

namespace flow::py {

void init_autocast(nb::module_& m) {
  m.def("_autocast_enabled", []() { return autocast::enabled(); });
  m.def("_set_autocast_enabled", [](bool on) { autocast::set_enabled(on); });
  m.def("_autocast_dtype", []() { return dtype_object(autocast::dtype()); });
  m.def("_set_autocast_dtype", [](nb::handle d) {
    DType t = dtype_arg(d);
    FLOW_VALUE_CHECK(is_floating(t), "autocast: dtype must be a floating type, got ", dtype_name(t));
    autocast::set_dtype(t);
  });
  m.def("_autocast_cache_enabled", []() { return autocast::cache_enabled(); });
  m.def("_set_autocast_cache_enabled", [](bool on) { autocast::set_cache_enabled(on); });
  m.def("_autocast_increment_nesting", []() { return autocast::increment_nesting(); });
  m.def("_autocast_decrement_nesting", []() { return autocast::decrement_nesting(); });
  m.def("_clear_autocast_cache", []() { autocast::clear_cache(); });
  // {op name: 'lower' | 'fp32' | 'promote' | 'fp32_3d' | 'fp32_pad' | 'none'}; returns the unknown names.
  m.def("_set_autocast_policy", [](nb::dict d) {
    std::unordered_map<std::string, autocast::Policy> t;
    for (auto [k, v] : d) t[nb::cast<std::string>(k)] = autocast::parse_policy(nb::cast<std::string>(v));
    return autocast::set_policies(t);
  });
  m.def("_autocast_policy_of", [](const std::string& name) {
    const OpDef* op = find_op(name);
    if (!op) return std::string("none");
    switch (autocast::policy_of(*op)) {
      case autocast::Policy::Lower: return std::string("lower");
      case autocast::Policy::Fp32: return std::string("fp32");
      case autocast::Policy::Promote: return std::string("promote");
      case autocast::Policy::Fp32If3d: return std::string("fp32_3d");
      case autocast::Policy::Fp32IfPad: return std::string("fp32_pad");
      default: return std::string("none");
    }
  });
  // GradScaler: unscale gradients in place; True when one held an inf/NaN.
  m.def("_amp_non_finite_check_and_unscale_", [](const std::vector<Tensor>& grads, double inv_scale) {
    return amp::non_finite_check_and_unscale(grads, inv_scale);
  });
  // Casts the eligible tensors of a list for a policy (Python-level composites such as F.linear).
  m.def("_autocast_cast", [](const std::string& policy, const std::vector<Tensor>& ts) {
    return wrap_list(autocast::cast_tensors(autocast::parse_policy(policy), ts), false);
  });
}

}  // namespace flow::py
