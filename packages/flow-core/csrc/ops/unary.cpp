// Elementwise unary math. Each op: one functor for the forward, its backward written with registered ops.
#include <cmath>

#include "elementwise.h"

namespace flow {

// Runs `f` over floating inputs (integers are promoted to the default float dtype first).
template <typename MakeF>
void unary_float_kernel(const char* name, const Tensor& in, const Tensor& out, MakeF make_f) {
  DType ct = is_floating(in.dtype()) ? in.dtype() : default_float_dtype();
  with_compute_dtype({in}, out, ct, ct, [&](const Tensor& o, const TensorList& c) {
    dispatch_floating(ct, name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      unary_loop<T, T>(o, c[0], make_f(tag));
    });
  });
}

// Same dtype in and out, all numeric types.
template <typename MakeF>
void unary_numeric_kernel(const char* name, const Tensor& in, const Tensor& out, MakeF make_f) {
  with_compute_dtype({in}, out, in.dtype(), in.dtype(), [&](const Tensor& o, const TensorList& c) {
    dispatch_numeric(in.dtype(), name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      unary_loop<T, T>(o, c[0], make_f(tag));
    });
  });
}

#define FLOW_UNARY_FLOAT_OP(NAME, EXPR, SAVE_IN, SAVE_OUT, GRAD)                                                \
  FLOW_OP(NAME)                                                                                              \
      .schema(#NAME "(Tensor self) -> Tensor")                                                               \
      .traits(kElementwise | kUnary)                                                                         \
      .meta(meta_unary_float)                                                                                \
      .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {                              \
        unary_float_kernel(#NAME, in[0], out[0], [](auto tag) {                                              \
          using A = acc_t<typename decltype(tag)::type>;                                                    \
          return [](A x) -> A { return EXPR; };                                                             \
        });                                                                                                  \
      })                                                                                                     \
      .save_inputs(SAVE_IN)                                                                                  \
      .save_outputs(SAVE_OUT)                                                                                \
      .inplace_variant()                                                                                     \
      .backward([](BackwardCtx& c, const TensorList& g) -> TensorList { return {GRAD}; });

#define FLOW_NOSAVE std::vector<int>{}
#define FLOW_SAVE0 std::vector<int>{0}

FLOW_UNARY_FLOAT_OP(exp, std::exp(x), FLOW_NOSAVE, FLOW_SAVE0, ops::mul(g[0], c.output(0)))
FLOW_UNARY_FLOAT_OP(log, std::log(x), FLOW_SAVE0, FLOW_NOSAVE, ops::div(g[0], c.input(0)))

FLOW_OP(neg)
    .schema("neg(Tensor self) -> Tensor")
    .traits(kElementwise | kUnary)
    .meta([](const TensorList& in, const Attrs& a) {
      FLOW_RUNTIME_CHECK(in[0].dtype() != DType::Bool,
                         "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert "
                         "a mask, use the `~` or `logical_not()` operator instead.");
      return meta_unary_same(in, a);
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      FLOW_RUNTIME_CHECK(in[0].dtype() != DType::Bool,
                         "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert "
                         "a mask, use the `~` or `logical_not()` operator instead.");
      unary_numeric_kernel("neg", in[0], out[0], [](auto tag) {
        using A = acc_t<typename decltype(tag)::type>;
        return [](A x) -> A { return static_cast<A>(-x); };
      });
    })
    .inplace_variant()
    .backward([](BackwardCtx&, const TensorList& g) -> TensorList { return {ops::neg(g[0])}; });

}  // namespace flow
