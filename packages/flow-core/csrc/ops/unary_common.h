// Shared pieces of the unary family (unary.cpp, unary_misc.cpp, activation*.cpp): typed kernel drivers,
// PyTorch-style dtype errors, and C++ wrappers for the family's ops used in other ops' backward formulas.
#pragma once
#include <cmath>
#include <limits>

#include "elementwise.h"

#define FLOW_VEC_INLINE inline __attribute__((always_inline))
// For the functors handed to the vectorised loops: GCC's inliner declines larger bodies (erf's two
// polynomials), and a loop that calls its functor runs scalar.
#define FLOW_VEC_LAMBDA __attribute__((always_inline))

namespace flow {

// Metas: float-only ops (ints raise like PyTorch), and ops keeping integer dtypes but refusing bool.
inline std::vector<TensorMeta> meta_float_only(const TensorList& in, const char* kernel) {
  if (!is_floating(in[0].dtype())) fail_not_implemented(kernel, in[0].dtype());
  return {{in[0].sizes(), in[0].dtype(), in[0].device()}};
}
inline std::vector<TensorMeta> meta_numeric_only(const TensorList& in, const char* kernel) {
  if (in[0].dtype() == DType::Bool) fail_not_implemented(kernel, in[0].dtype());
  return {{in[0].sizes(), in[0].dtype(), in[0].device()}};
}

// out[i] = f(a[i]) with out and a of type T: an `omp simd` loop (vectorised without aliasing checks)
// when both are contiguous, else the strided generic loop. 16-bit floats go through the generic loop.
template <typename T, typename F>
void simd_unary(const Tensor& out, const Tensor& a_in, F f) {
  if constexpr (std::is_same_v<T, acc_t<T>>) {
    // A strided input is first copied dense: the copy is a cheap memory pass, while the strided loop would
    // evaluate f unvectorised (several times slower for exp-like functors).
    Tensor a = a_in;
    if (out.is_contiguous() && !a.is_contiguous() && out.sizes() == a.sizes()) {
      a = empty(a_in.sizes(), a_in.dtype(), a_in.device());
      ops::copy_into(a, a_in);
    }
    if (out.is_contiguous() && a.is_contiguous() && out.sizes() == a.sizes()) {
      T* o = out.data<T>();
      const T* x = a.data<T>();
      parallel_for(out.numel(), kParallelGrain, [&](int64_t b, int64_t e) __attribute__((flatten)) {
#pragma omp simd
        for (int64_t i = b; i < e; ++i) o[i] = static_cast<T>(f(x[i]));
      });
      return;
    }
  }
  unary_loop<T, T>(out, a_in, f);
}

// out[i] = f(a[i], b[i]), all of type T (a, b broadcast to out); binary_loop vectorises the dense runs.
template <typename T, typename F>
void simd_binary(const Tensor& out, const Tensor& a, const Tensor& b, F f) {
  binary_loop<T, T>(out, a, b, f);
}

// out = f(in) computed in a floating type (integers promote to the default float dtype).
template <typename MakeF>
void unary_float_kernel(const char* name, const Tensor& in, const Tensor& out, MakeF make_f) {
  DType ct = is_floating(in.dtype()) ? in.dtype() : default_float_dtype();
  with_compute_dtype({in}, out, ct, ct, [&](const Tensor& o, const TensorList& c) {
    dispatch_floating(ct, name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      simd_unary<T>(o, c[0], make_f(tag));
    });
  });
}

// out = f(in) in the input's own dtype, any numeric type (no bool).
template <typename MakeF>
void unary_numeric_kernel(const char* name, const Tensor& in, const Tensor& out, MakeF make_f) {
  DType ct = out.dtype();
  with_compute_dtype({in}, out, ct, ct, [&](const Tensor& o, const TensorList& c) {
    dispatch_numeric(ct, name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      simd_unary<T>(o, c[0], make_f(tag));
    });
  });
}

// Meta of a fused backward helper f(grad, x): broadcast shape, promoted floating dtype.
inline std::vector<TensorMeta> meta_grad_helper(const TensorList& in, const Attrs&) {
  DType d = promote_types(in[0].dtype(), in[1].dtype());
  if (!is_floating(d)) d = default_float_dtype();
  return {{broadcast_shapes(in[0].sizes(), in[1].sizes(), "backward"), d, common_device(in, "backward")}};
}

// out = f(grad, x) for fused backward helpers, computed in the output's floating dtype.
template <typename MakeF>
void grad_kernel(const char* name, const TensorList& in, const Tensor& out, MakeF make_f) {
  DType ct = out.dtype();
  with_compute_dtype({in[0], in[1]}, out, ct, ct, [&](const Tensor& o, const TensorList& c) {
    dispatch_floating(ct, name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      simd_binary<T>(o, c[0], c[1], make_f(tag));
    });
  });
}

namespace ops {
// The family's ops, for backward formulas (each goes through the dispatcher, so stays differentiable).
inline Tensor unary(const char* name, const Tensor& x) { return call1(name, {x}); }
inline Tensor sigmoid(const Tensor& x) { return call1("sigmoid", {x}); }
inline Tensor tanh(const Tensor& x) { return call1("tanh", {x}); }
inline Tensor exp(const Tensor& x) { return call1("exp", {x}); }
inline Tensor square(const Tensor& x) { return call1("square", {x}); }
inline Tensor sign(const Tensor& x) { return call1("sign", {x}); }
inline Tensor isfinite(const Tensor& x) { return call1("isfinite", {x}); }
inline Tensor rsqrt(const Tensor& x) { return call1("rsqrt", {x}); }
inline Tensor sub(const Tensor& a, Scalar b) { return add(a, Scalar(-b.to_double())); }
// 1 - x, 2 - x etc.: c - x
inline Tensor rsub(Scalar c, const Tensor& x) { return add(neg(x), c); }
}  // namespace ops

}  // namespace flow
