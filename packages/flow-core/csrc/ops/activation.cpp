// Activation functions (forward). Backward formulas call the fused helpers in activation_backward.cpp.
// Float32 uses the vectorisable exp/tanh of unary_vec.h; dtype rules (which ops accept integers) follow
// PyTorch's CPU kernels.
// Ternaries on floats block vectorisation while FP-exception flags must be preserved (GCC's default
// -ftrapping-math; clang defaults to off); we never read those flags. O2: the extension is built with -Os
// (nanobind's default), whose inlining limits keep the functors below out of the vectorised loops.
#pragma GCC optimize("O2", "no-trapping-math")
#include "activation.h"

namespace flow {
namespace {

constexpr uint64_t kAct = kElementwise | kUnary;
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kSeluScale = 1.0507009873554804934193349852946;
constexpr double kSqrt1_2 = 0.70710678118654752440;
constexpr double kGeluBeta = 0.79788456080286535588;  // sqrt(2 / pi)
constexpr double kGeluKappa = 0.044715;

// Float-only activation: forward functor from make_f(tag), error naming PyTorch's kernel for other dtypes.
#define FLOW_FLOAT_ACT_KERNEL(NAME, ...)                            \
  [](const TensorList& in, const TensorList& out, const Attrs& a) { \
    unary_float_kernel(NAME, in[0], out[0], [&a](auto tag) {        \
      using A = acc_t<typename decltype(tag)::type>;                \
      (void)a;                                                      \
      __VA_ARGS__                                                   \
    });                                                             \
  }

Tensor X(BackwardCtx& c) { return c.input(0); }
Tensor Y(BackwardCtx& c) { return c.output(0); }

MetaFn float_only(const char* kernel) {
  return [kernel](const TensorList& in, const Attrs&) { return meta_float_only(in, kernel); };
}

// relu/relu6/hardtanh/threshold keep integer dtypes; bool is refused with PyTorch's message.
std::vector<TensorMeta> meta_no_bool(const TensorList& in, const char* msg) {
  if (in[0].dtype() == DType::Bool) fail(ErrorKind::Runtime, msg);
  return {{in[0].sizes(), in[0].dtype(), in[0].device()}};
}

// PyTorch refuses Scalar arguments that overflow an integer tensor's dtype.
void check_fits(const Scalar& v, DType t) {
  if (is_integral(t)) check_scalar_fits(v, t);
}

// clamp(x, lo, hi) that propagates NaN; the lower bound first, so lo > hi gives hi everywhere, as in torch.
template <typename A>
A clamp_nan(A x, A lo, A hi) {
  A y = x < lo ? lo : x;
  return y > hi ? hi : y;
}

void hardtanh_kernel(const Tensor& in, const Tensor& out, double lo_d, double hi_d) {
  unary_numeric_kernel("hardtanh", in, out, [=](auto tag) {
    using A = acc_t<typename decltype(tag)::type>;
    A lo = static_cast<A>(lo_d), hi = static_cast<A>(hi_d);
    return [lo, hi](A x) -> A { return clamp_nan(x, lo, hi); };
  });
}

void elu_kernel(const Tensor& in, const Tensor& out, double alpha, double scale, double input_scale) {
  unary_float_kernel("elu", in, out, [=](auto tag) {
    using A = acc_t<typename decltype(tag)::type>;
    A neg = static_cast<A>(alpha * scale), pos = static_cast<A>(scale), is = static_cast<A>(input_scale);
    return [=](A x) -> A { return x <= A(0) ? vexpm1_nonpos<A>(x * is) * neg : x * pos; };
  });
}

Tensor elu_grad(const Tensor& g, const Tensor& x, double alpha, double scale, double input_scale) {
  return ops::call1("elu_backward", {g, x}, {Scalar(scale), Scalar(alpha * scale * input_scale), Scalar(input_scale)});
}

}  // namespace

// ---- piecewise linear ---------------------------------------------------------------------------------

FLOW_OP(relu)
    .schema("relu(Tensor self) -> Tensor")
    .traits(kAct)
    .meta([](const TensorList& in, const Attrs&) { return meta_no_bool(in, "Boolean inputs not supported for relu"); })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      unary_numeric_kernel("relu", in[0], out[0], [](auto tag) {
        using A = acc_t<typename decltype(tag)::type>;
        return [](A x) -> A { return x < A(0) ? A(0) : x; };  // NaN propagates
      });
    })
    .save_outputs({0})
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {ops::call1("threshold_backward", {g[0], Y(c)}, {Scalar(int64_t(0))})};
    });

FLOW_OP(relu6)
    .schema("relu6(Tensor self) -> Tensor")
    .traits(kAct)
    .meta([](const TensorList& in, const Attrs&) { return meta_no_bool(in, "Bool inputs not supported for hardtanh"); })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) { hardtanh_kernel(in[0], out[0], 0, 6); })
    .save_inputs({0})
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {ops::call1("hardtanh_backward", {g[0], X(c)}, {Scalar(int64_t(0)), Scalar(int64_t(6))})};
    });

FLOW_OP(hardtanh)
    .schema("hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor")
    .traits(kAct)
    .meta([](const TensorList& in, const Attrs& a) {
      auto m = meta_no_bool(in, "Bool inputs not supported for hardtanh");
      const DType t = in[0].dtype();
      if (is_integral(t)) {  // torch converts the limits to the dtype (truncating) before checking them
        const double lo = std::trunc(a.f("min_val")), hi = std::trunc(a.f("max_val"));
        FLOW_RUNTIME_CHECK(t != DType::UInt8 || (lo >= 0 && hi >= 0),
                           "cannot do hardtanh on an unsigned type with negative limits");
        check_fits(Scalar(lo), t);
        check_fits(Scalar(hi), t);
      }
      return m;
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      hardtanh_kernel(in[0], out[0], a.f("min_val"), a.f("max_val"));
    })
    .save_inputs({0})
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {ops::call1("hardtanh_backward", {g[0], X(c)}, c.attrs.values)};
    });

FLOW_OP(threshold)
    .schema("threshold(Tensor self, Scalar threshold, Scalar value) -> Tensor")
    .traits(kAct)
    .meta([](const TensorList& in, const Attrs& a) {
      check_fits(a.s("threshold"), in[0].dtype());
      check_fits(a.s("value"), in[0].dtype());
      return meta_numeric_only(in, "threshold_cpu");
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      double th = a.f("threshold"), v = a.f("value");
      bool int_args = a.s("threshold").is_int() && a.s("value").is_int();
      int64_t thi = a.s("threshold").to_int(), vi = a.s("value").to_int();
      unary_numeric_kernel("threshold", in[0], out[0], [=](auto tag) {
        using A = acc_t<typename decltype(tag)::type>;
        A t = int_args ? static_cast<A>(thi) : static_cast<A>(th);
        A val = int_args ? static_cast<A>(vi) : static_cast<A>(v);
        return [t, val](A x) -> A { return x <= t ? val : x; };
      });
    })
    .save_inputs({0})
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {ops::call1("threshold_backward", {g[0], X(c)}, {c.attrs.s("threshold")})};
    });

FLOW_OP(leaky_relu)
    .schema("leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor")
    .traits(kAct)
    .meta(float_only("leaky_relu_cpu"))
    .cpu_out(FLOW_FLOAT_ACT_KERNEL("leaky_relu", const A s = static_cast<A>(a.f("negative_slope"));
                                   return [s](A x) -> A { return x > A(0) ? x : x * s; };))
    .save_inputs({0})
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {ops::call1("leaky_relu_backward", {g[0], X(c)}, c.attrs.values)};
    });

FLOW_OP(hardshrink)
    .schema("hardshrink(Tensor self, Scalar lambd=0.5) -> Tensor")
    .traits(kAct)
    .meta(float_only("hardshrink_cpu"))
    .cpu_out(FLOW_FLOAT_ACT_KERNEL("hardshrink", const A l = static_cast<A>(a.f("lambd"));
                                   return [l](A x) -> A { return ((x >= -l) & (x <= l)) ? A(0) : x; };))
    .save_inputs({0})
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {ops::call1("hardshrink_backward", {g[0], X(c)}, c.attrs.values)};
    });

FLOW_OP(softshrink)
    .schema("softshrink(Tensor self, Scalar lambd=0.5) -> Tensor")
    .traits(kAct)
    .meta([](const TensorList& in, const Attrs& a) {
      auto m = meta_float_only(in, "softshrink_check");
      FLOW_RUNTIME_CHECK(a.f("lambd") >= 0, "lambda must be in range [0, inf) for softshrink, but found ",
                         a.f("lambd"));
      return m;
    })
    .cpu_out(FLOW_FLOAT_ACT_KERNEL("softshrink", const A l = static_cast<A>(a.f("lambd"));
                                   return [l](A x) -> A { return x > l ? x - l : (x < -l ? x + l : x * A(0)); };))
    .save_inputs({0})
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {ops::call1("hardshrink_backward", {g[0], X(c)}, c.attrs.values)};
    });

FLOW_OP(hardsigmoid)
    .schema("hardsigmoid(Tensor self) -> Tensor")
    .traits(kAct)
    .meta(float_only("hardsigmoid_cpu"))
    .cpu_out(FLOW_FLOAT_ACT_KERNEL("hardsigmoid",
                                   return [](A x) -> A { return clamp_nan(x + A(3), A(0), A(6)) / A(6); };))
    .save_inputs({0})
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {ops::call1("hardsigmoid_backward", {g[0], X(c)})};
    });

FLOW_OP(hardswish)
    .schema("hardswish(Tensor self) -> Tensor")
    .traits(kAct)
    .meta(float_only("hardswish_cpu"))
    .cpu_out(FLOW_FLOAT_ACT_KERNEL("hardswish",
                                   return [](A x) -> A { return x * clamp_nan(x + A(3), A(0), A(6)) / A(6); };))
    .save_inputs({0})
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {ops::call1("hardswish_backward", {g[0], X(c)})};
    });

// ---- smooth -------------------------------------------------------------------------------------------

FLOW_OP(sigmoid)
    .schema("sigmoid(Tensor self) -> Tensor")
    .traits(kAct)
    .meta(meta_unary_float)
    .cpu_out(FLOW_FLOAT_ACT_KERNEL("sigmoid", return [](A x) -> A { return vsigmoid<A>(x); };))
    .save_outputs({0})
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList { return {ops::sigmoid_backward(g[0], Y(c))}; });

FLOW_OP(tanh)
    .schema("tanh(Tensor self) -> Tensor")
    .traits(kAct)
    .meta(meta_unary_float)
    .cpu_out(FLOW_FLOAT_ACT_KERNEL("tanh", return [](A x) -> A { return vtanh<A>(x); };))
    .save_outputs({0})
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList { return {ops::tanh_backward(g[0], Y(c))}; });

FLOW_OP(silu)
    .schema("silu(Tensor self) -> Tensor")
    .traits(kAct)
    .meta(float_only("silu_cpu"))
    .cpu_out(FLOW_FLOAT_ACT_KERNEL("silu", return [](A x) -> A { return x / (A(1) + vexp<A>(-x)); };))
    .save_inputs({0})
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList { return {ops::silu_backward(g[0], X(c))}; });

FLOW_OP(gelu)
    .schema("gelu(Tensor self, *, str approximate='none') -> Tensor")
    .traits(kAct)
    .meta([](const TensorList& in, const Attrs& a) {
      auto m = meta_float_only(in, "GeluKernelImpl");
      FLOW_RUNTIME_CHECK(a.str("approximate") == "none" || a.str("approximate") == "tanh",
                         "approximate argument must be either none or tanh.");
      return m;
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      if (a.str("approximate") == "tanh") {
        unary_float_kernel("gelu", in[0], out[0], [](auto tag) {
          using A = acc_t<typename decltype(tag)::type>;
          return
              [](A x) -> A { return A(0.5) * x * (A(1) + vtanh<A>(A(kGeluBeta) * (x + A(kGeluKappa) * x * x * x))); };
        });
      } else {
        unary_float_kernel("gelu", in[0], out[0], [](auto tag) {
          using A = acc_t<typename decltype(tag)::type>;
          return [](A x) -> A { return x * A(0.5) * (A(1) + verf_abs<A>(x * A(kSqrt1_2))); };
        });
      }
    })
    .save_inputs({0})
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {ops::call1("gelu_backward", {g[0], X(c)}, {c.attrs.str("approximate")})};
    });

FLOW_OP(softplus)
    .schema("softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor")
    .traits(kAct)
    .meta(float_only("softplus_cpu"))
    .cpu_out(FLOW_FLOAT_ACT_KERNEL("softplus", const A b = static_cast<A>(a.f("beta"));
                                   const A t = static_cast<A>(a.f("threshold")); return
                                   [b, t](A x) -> A { return (x * b) > t ? x : std::log1p(vexp<A>(x * b)) / b; };))
    .save_inputs({0})
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {ops::call1("softplus_backward", {g[0], X(c)}, c.attrs.values)};
    });

FLOW_OP(mish)
    .schema("mish(Tensor self) -> Tensor")
    .traits(kAct)
    .meta(float_only("mish_cpu"))
    .cpu_out(FLOW_FLOAT_ACT_KERNEL("mish", return [](A x) -> A { return x * vtanh<A>(std::log1p(vexp<A>(x))); };))
    .save_inputs({0})
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      // mish'(x) = tanh(sp) + x sigmoid(x) (1 - tanh(sp)^2), sp = softplus(x)
      Tensor x = X(c);
      Tensor t = ops::tanh(ops::call1("softplus", {x}));
      Tensor r = ops::mul(ops::mul(x, ops::sigmoid(x)), ops::rsub(1, ops::square(t)));
      return {ops::mul(g[0], ops::add(t, r))};
    });

FLOW_OP(log_sigmoid)
    .schema("log_sigmoid(Tensor self) -> Tensor")
    .traits(kAct)
    .meta(float_only("log_sigmoid_cpu"))
    .cpu_out(FLOW_FLOAT_ACT_KERNEL("log_sigmoid",
                                   return [](A x) -> A {
                                     A ax = x < A(0) ? -x : x;
                                     return (x < A(0) ? x : A(0)) - std::log1p(vexp<A>(-ax));
                                   };))
    .save_inputs({0})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {ops::mul(g[0], ops::sigmoid(ops::neg(X(c))))};
    });

FLOW_OP(elu)
    .schema("elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor")
    .traits(kAct)
    .meta(float_only("elu_cpu"))
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      elu_kernel(in[0], out[0], a.f("alpha"), a.f("scale"), a.f("input_scale"));
    })
    .save_inputs({0})
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {elu_grad(g[0], X(c), c.attrs.f("alpha"), c.attrs.f("scale"), c.attrs.f("input_scale"))};
    });

FLOW_OP(selu)
    .schema("selu(Tensor self) -> Tensor")
    .traits(kAct)
    .meta(float_only("elu_cpu"))
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      elu_kernel(in[0], out[0], kSeluAlpha, kSeluScale, 1.0);
    })
    .save_inputs({0})
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {elu_grad(g[0], X(c), kSeluAlpha, kSeluScale, 1.0)};
    });

FLOW_OP(celu)
    .schema("celu(Tensor self, Scalar alpha=1.0) -> Tensor")
    .traits(kAct)
    .meta([](const TensorList& in, const Attrs& a) {
      FLOW_RUNTIME_CHECK(a.f("alpha") != 0, "ZeroDivisionError: alpha cannot be 0 for CELU");
      return meta_float_only(in, "elu_cpu");
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      elu_kernel(in[0], out[0], a.f("alpha"), 1.0, 1.0 / a.f("alpha"));
    })
    .save_inputs({0})
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {elu_grad(g[0], X(c), c.attrs.f("alpha"), 1.0, 1.0 / c.attrs.f("alpha"))};
    });

}  // namespace flow
