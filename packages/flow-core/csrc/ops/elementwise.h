// Shared pieces of elementwise ops: meta inference by PyTorch's promotion rules, and the prelude that
// casts mixed-dtype inputs to the compute type before a typed loop runs.
#pragma once
#include "../kernels/cpu/loops.h"
#include "functions.h"

namespace flow {

// Broadcast shape; dtype = result_type (optionally forced to `out_dtype`).
inline std::vector<TensorMeta> meta_binary(const TensorList& in, const Attrs&) {
  return {
      {broadcast_shapes(in[0].sizes(), in[1].sizes(), "binary op"), result_type(in), common_device(in, "binary op")}};
}
inline std::vector<TensorMeta> meta_compare(const TensorList& in, const Attrs&) {
  return {{broadcast_shapes(in[0].sizes(), in[1].sizes(), "comparison"), DType::Bool, common_device(in, "comparison")}};
}
// Same shape; integer inputs give the default float dtype (sin of an int tensor is float).
inline std::vector<TensorMeta> meta_unary_float(const TensorList& in, const Attrs&) {
  DType d = is_floating(in[0].dtype()) ? in[0].dtype() : default_float_dtype();
  return {{in[0].sizes(), d, in[0].device()}};
}
inline std::vector<TensorMeta> meta_unary_same(const TensorList& in, const Attrs&) {
  return {{in[0].sizes(), in[0].dtype(), in[0].device()}};
}
inline std::vector<TensorMeta> meta_unary_bool(const TensorList& in, const Attrs&) {
  return {{in[0].sizes(), DType::Bool, in[0].device()}};
}

// Cast `t` to `dt` (no autograd: for use inside kernels).
inline Tensor cast_for_kernel(const Tensor& t, DType dt) {
  if (t.dtype() == dt) return t;
  Tensor r = empty(t.sizes(), dt, t.device());
  ops::copy_into(r, t);
  return r;
}

// Runs body(out, inputs...) with all inputs in `compute` dtype; when `out` is of another dtype, body
// writes a temporary that is then cast into `out`.
template <typename Body>
void with_compute_dtype(const TensorList& in, const Tensor& out, DType compute, DType body_out, Body&& body) {
  TensorList cin;
  cin.reserve(in.size());
  for (const Tensor& t : in) cin.push_back(t.defined() ? cast_for_kernel(t, compute) : t);
  if (out.dtype() == body_out) {
    body(out, cin);
  } else {
    Tensor tmp = empty(out.sizes(), body_out, out.device());
    body(tmp, cin);
    ops::copy_into(out, tmp);
  }
}

// A binary arithmetic kernel: compute in result_type, `F` a generic functor on acc_t values.
template <typename Dispatch, typename MakeF>
void binary_arith_kernel(const char* name, const TensorList& in, const Tensor& out, Dispatch dispatch, MakeF make_f) {
  DType ct = result_type(in);
  with_compute_dtype(in, out, ct, ct, [&](const Tensor& o, const TensorList& c) {
    dispatch(ct, name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      binary_loop<T, T>(o, c[0], c[1], make_f(tag));
    });
  });
}

template <typename F>
void dispatch_all_fn(DType t, const char* op, F&& f) {
  dispatch_all(t, op, std::forward<F>(f));
}

}  // namespace flow
