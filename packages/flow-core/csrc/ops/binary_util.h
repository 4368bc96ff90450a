// Helpers shared by the binary family's files (binary_math.cpp, compare.cpp, ternary.cpp, special.cpp):
// PyTorch-style dtype errors, reading wrapped Python numbers, the floating-result meta and kernel driver,
// the integer zero-division flag, and small op wrappers used by backward formulas.
#pragma once
#include <atomic>

#include "elementwise.h"

namespace flow::binary {

[[noreturn]] inline void not_implemented(const char* kernel, DType t) { fail_not_implemented(kernel, t); }

inline bool is_wrapped(const Tensor& t) { return t.defined() && t.impl()->is_wrapped_number; }

// The value of a one-element tensor as a Scalar (bool, int or float kept apart).
inline Scalar scalar_value(const Tensor& t) {
  FLOW_RUNTIME_CHECK(t.numel() == 1, "expected a one-element tensor");
  return dispatch_all(t.dtype(), "scalar_value", [&](auto tag) -> Scalar {
    using T = typename decltype(tag)::type;
    T v = *t.data<T>();
    if constexpr (std::is_same_v<T, bool>) return Scalar(v);
    else if constexpr (std::is_integral_v<T>) return Scalar(static_cast<int64_t>(v));
    else return Scalar(static_cast<double>(static_cast<acc_t<T>>(v)));
  });
}

// result_type, lifted to the default float dtype for integral/bool results (atan2, xlogy, ...).
inline DType float_result_type(const TensorList& in) {
  DType d = result_type(in);
  return is_floating(d) ? d : default_float_dtype();
}

// Meta for ops with a floating result (integers promote to the default float dtype).
inline MetaFn meta_float(const char* kernel, bool allow_integral) {
  return [kernel, allow_integral](const TensorList& in, const Attrs&) {
    DType rt = result_type(in);
    if (!allow_integral && !is_floating(rt)) not_implemented(kernel, rt);
    return std::vector<TensorMeta>{
        {broadcast_shapes(in[0].sizes(), in[1].sizes(), kernel), float_result_type(in), common_device(in, kernel)}};
  };
}

// Runs a floating functor in float_result_type.
template <typename MakeF>
inline void float_binary_kernel(const char* name, const TensorList& in, const Tensor& out, MakeF make_f) {
  DType ct = float_result_type(in);
  with_compute_dtype(in, out, ct, ct, [&](const Tensor& o, const TensorList& c) {
    dispatch_floating(ct, name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      binary_loop<T, T>(o, c[0], c[1], make_f(tag));
    });
  });
}

// Whether an integral tensor holds a zero (checked before integer division so that nothing is written when
// the op raises, in-place variants included).
inline bool any_zero(const Tensor& b) {
  if (!is_integral(b.dtype(), true)) return false;
  return dispatch_integral(b.dtype(), "any_zero", [&](auto tag) -> bool {
    using T = typename decltype(tag)::type;
    std::atomic<bool> z{false};
    for_each_element<1>({&b}, b.sizes(), [&z](std::array<char*, 1> p, std::array<int64_t, 1> s, int64_t n) {
      for (int64_t i = 0; i < n; ++i)
        if (*reinterpret_cast<const T*>(p[0] + i * s[0]) == T(0)) {
          z.store(true, std::memory_order_relaxed);
          return;
        }
    });
    return z.load();
  });
}

// ---- wrappers for backward formulas (all differentiable, through the dispatcher) ----------------------
inline Tensor call2(const char* op, const Tensor& a, const Tensor& b) { return ops::call1(op, {a, b}); }
// A 0-dim zero of g's dtype (not a wrapped number, so it never changes the result dtype of a where).
inline Tensor zero_of(const Tensor& g) { return ops::scalar_tensor(Scalar(int64_t(0)), g.dtype(), g.device()); }
inline Tensor where0(const Tensor& cond, const Tensor& g) { return ops::where(cond, g, zero_of(g)); }
inline Tensor where0_else(const Tensor& cond, const Tensor& g) { return ops::where(cond, zero_of(g), g); }

}  // namespace flow::binary
