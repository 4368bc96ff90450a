// Broadcasting arithmetic: add, sub, mul, div (with rounding modes). Python scalars arrive as wrapped
// 0-dim tensors, so one definition serves tensor-tensor and tensor-scalar calls on either side.
#include <atomic>
#include <cmath>

#include "binary_util.h"

namespace flow {
namespace {

auto all_types = [](DType t, const char* n, auto&& f) { dispatch_all(t, n, f); };

template <typename T>
void check_alpha(const char* op, Scalar alpha) {
  if constexpr (std::is_integral_v<T>)
    FLOW_RUNTIME_CHECK(!alpha.is_float(),
                       "For integral input tensors, argument alpha must not be a floating point number.");
}

void add_kernel(const TensorList& in, const TensorList& out, const Attrs& a, double sign, const char* name) {
  Scalar alpha = a.s("alpha");
  binary_arith_kernel(name, in, out[0], all_types, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = acc_t<T>;
    check_alpha<T>(name, alpha);
    if constexpr (std::is_same_v<T, bool>) {
      return [](A x, A y) { return static_cast<A>(x || y); };
    } else {
      A al = static_cast<A>(sign * alpha.to_double());
      if (std::is_integral_v<A>) al = static_cast<A>(sign) * static_cast<A>(alpha.to_int());
      return [al](A x, A y) { return static_cast<A>(x + al * y); };
    }
  });
}

}  // namespace

FLOW_OP(add)
    .schema("add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")
    .traits(kElementwise | kBroadcastBinary)
    .meta(meta_binary)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) { add_kernel(in, out, a, 1.0, "add"); })
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Scalar alpha = c.attrs.s("alpha");
      Tensor gb;
      if (c.needs(1)) gb = alpha.to_double() == 1.0 ? g[0] : ops::mul(g[0], alpha);
      return {c.needs(0) ? g[0] : Tensor(), gb};
    });

FLOW_OP(sub)
    .schema("sub(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")
    .traits(kElementwise | kBroadcastBinary)
    .meta([](const TensorList& in, const Attrs& a) {
      FLOW_RUNTIME_CHECK(!(in[0].dtype() == DType::Bool && in[1].dtype() == DType::Bool),
                         "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                         "`logical_xor()` operator instead.");
      FLOW_RUNTIME_CHECK(in[0].dtype() != DType::Bool && in[1].dtype() != DType::Bool,
                         "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to "
                         "invert a mask, use the `~` or `logical_not()` operator instead.");
      return meta_binary(in, a);
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) { add_kernel(in, out, a, -1.0, "sub"); })
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Scalar alpha = c.attrs.s("alpha");
      return {c.needs(0) ? g[0] : Tensor(), c.needs(1) ? ops::mul(g[0], Scalar(-alpha.to_double())) : Tensor()};
    });

FLOW_OP(mul)
    .schema("mul(Tensor self, Tensor other) -> Tensor")
    .traits(kElementwise | kBroadcastBinary)
    .meta(meta_binary)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      binary_arith_kernel("mul", in, out[0], all_types, [](auto tag) {
        using A = acc_t<typename decltype(tag)::type>;
        if constexpr (std::is_same_v<A, bool>) return [](A x, A y) { return static_cast<A>(x && y); };
        else return [](A x, A y) { return static_cast<A>(x * y); };
      });
    })
    .save_inputs({0, 1}, {{1}, {0}})  // each operand only for the other one's gradient
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {c.needs(0) ? ops::mul(g[0], c.input(1)) : Tensor(), c.needs(1) ? ops::mul(g[0], c.input(0)) : Tensor()};
    });

namespace {

// x / y toward zero for integers, where INT_MIN / -1 (which traps on x86) wraps to INT_MIN as in PyTorch.
template <typename A>
A int_trunc_div(A x, A y) {
  if constexpr (std::is_signed_v<A>)
    if (y == -1) return static_cast<A>(A(0) - static_cast<std::make_unsigned_t<A>>(x));
  return static_cast<A>(x / y);
}

template <typename A>
A floor_div(A x, A y) {
  if constexpr (std::is_integral_v<A>) {
    if constexpr (std::is_signed_v<A>)
      if (y == -1) return int_trunc_div(x, y);
    A q = x / y;
    if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
    return q;
  } else {
    if (y == 0) return x / y;
    A m = std::fmod(x, y);
    A d = (x - m) / y;
    if (m != 0 && ((y < 0) != (m < 0))) d -= 1;
    A fd = std::floor(d);
    if (d - fd > A(0.5)) fd += 1;
    return fd;
  }
}

std::vector<TensorMeta> meta_div(const TensorList& in, const Attrs& a) {
  auto m = meta_binary(in, a);
  if (a.none("rounding_mode") && !is_floating(m[0].dtype)) m[0].dtype = default_float_dtype();
  return m;
}

}  // namespace

FLOW_OP(div)
    .schema("div(Tensor self, Tensor other, *, str? rounding_mode=None) -> Tensor")
    .traits(kElementwise | kBroadcastBinary)
    .meta(meta_div)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      std::string mode = a.none("rounding_mode") ? "" : a.str("rounding_mode");
      FLOW_RUNTIME_CHECK(mode.empty() || mode == "trunc" || mode == "floor",
                         "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '", mode, "'");
      DType ct = meta_div(in, a)[0].dtype;
      with_compute_dtype(in, out[0], ct, ct, [&](const Tensor& o, const TensorList& c) {
        dispatch_all(ct, "div", [&](auto tag) {
          using T = typename decltype(tag)::type;
          using A = acc_t<T>;
          if constexpr (std::is_same_v<T, bool>) {
            fail_not_implemented(mode == "floor"   ? "div_floor_cpu"
                                 : mode == "trunc" ? "div_trunc_cpu"
                                                   : "div_true_cpu",
                                 DType::Bool);
          } else if constexpr (std::is_integral_v<A>) {
            // integer division by zero is an error, not UB; checked first so that in-place calls write nothing.
            // An empty result divides nothing (PyTorch does not raise there either).
            FLOW_RUNTIME_CHECK(o.numel() == 0 || !binary::any_zero(c[1]), "ZeroDivisionError");
            bool trunc = mode == "trunc";
            std::atomic<bool> zero{false};
            binary_loop<T, T>(o, c[0], c[1], [trunc, &zero](A x, A y) -> A {
              if (y == 0) {
                zero.store(true, std::memory_order_relaxed);
                return 0;
              }
              return trunc ? int_trunc_div(x, y) : floor_div(x, y);
            });
            FLOW_RUNTIME_CHECK(!zero.load(), "ZeroDivisionError");
          } else if (mode.empty()) {
            binary_loop<T, T>(o, c[0], c[1], [](A x, A y) { return x / y; });
          } else if (mode == "trunc") {
            binary_loop<T, T>(o, c[0], c[1], [](A x, A y) { return std::trunc(x / y); });
          } else {
            binary_loop<T, T>(o, c[0], c[1], [](A x, A y) { return floor_div(x, y); });
          }
        });
      });
    })
    .save_inputs({0, 1}, {{1}, {}})  // self only for other's gradient
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      if (!c.attrs.none("rounding_mode")) {
        // rounding makes the function piecewise constant
        return {c.needs(0) ? ops::zeros_like(g[0]) : Tensor(), c.needs(1) ? ops::zeros_like(g[0]) : Tensor()};
      }
      Tensor b = c.input(1);
      Tensor ga = c.needs(0) ? ops::div(g[0], b) : Tensor();
      Tensor gb;
      if (c.needs(1)) gb = ops::neg(ops::div(ops::mul(g[0], c.input(0)), ops::mul(b, b)));
      return {ga, gb};
    });

}  // namespace flow
