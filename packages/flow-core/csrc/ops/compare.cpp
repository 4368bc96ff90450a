// Comparisons (bool results, no gradient), logical and bitwise ops, shifts, and the whole-tensor tests
// equal / isclose / allclose. Mixed dtypes compare in their promoted type, like PyTorch.
#include <cmath>
#include <type_traits>

#include "binary_util.h"

namespace flow {
namespace {

using binary::not_implemented;

enum class Cmp { Eq, Ne, Lt, Le, Gt, Ge };

template <Cmp C, typename A>
inline bool cmp(A x, A y) {
  if constexpr (C == Cmp::Eq) return x == y;
  else if constexpr (C == Cmp::Ne) return x != y;
  else if constexpr (C == Cmp::Lt) return x < y;
  else if constexpr (C == Cmp::Le) return x <= y;
  else if constexpr (C == Cmp::Gt) return x > y;
  else return x >= y;
}

template <Cmp C>
void compare_kernel(const TensorList& in, const TensorList& out, const Attrs&) {
  DType ct = result_type(in);
  with_compute_dtype(in, out[0], ct, DType::Bool, [&](const Tensor& o, const TensorList& c) {
    dispatch_all(ct, "comparison", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = acc_t<T>;
      binary_loop<bool, T>(o, c[0], c[1], [](A x, A y) { return cmp<C, A>(x, y); });
    });
  });
}

// Logical ops: every input is read as bool (non-zero, NaN included, is true). Bool storage holds 0/1, so
// the loop runs on bytes with bitwise operators, which vectorise.
template <typename F>
void logical_kernel(const TensorList& in, const TensorList& out, F f) {
  with_compute_dtype(in, out[0], DType::Bool, DType::Bool,
                     [&](const Tensor& o, const TensorList& c) { binary_loop<uint8_t, uint8_t>(o, c[0], c[1], f); });
}

MetaFn meta_integral(const char* kernel, bool allow_bool) {
  return [kernel, allow_bool](const TensorList& in, const Attrs& a) {
    auto m = meta_binary(in, a);
    if (!is_integral(m[0].dtype, allow_bool)) not_implemented(kernel, m[0].dtype);
    return m;
  };
}

enum class Bit { And, Or, Xor, Lshift, Rshift };

template <Bit B>
void bitwise_kernel(const TensorList& in, const TensorList& out, const Attrs&) {
  DType ct = result_type(in);
  with_compute_dtype(in, out[0], ct, ct, [&](const Tensor& o, const TensorList& c) {
    dispatch_integral(ct, "bitwise", [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (B == Bit::And) binary_loop<T, T>(o, c[0], c[1], [](T x, T y) { return static_cast<T>(x & y); });
      else if constexpr (B == Bit::Or) binary_loop<T, T>(o, c[0], c[1], [](T x, T y) { return static_cast<T>(x | y); });
      else if constexpr (B == Bit::Xor)
        binary_loop<T, T>(o, c[0], c[1], [](T x, T y) { return static_cast<T>(x ^ y); });
      else if constexpr (std::is_same_v<T, bool>) fail(ErrorKind::NotImplemented, "shift: not implemented for 'Bool'");
      else if constexpr (B == Bit::Lshift) {
        // PyTorch: shifts by a negative amount or by >= the bit width give 0
        binary_loop<T, T>(o, c[0], c[1], [](T x, T y) -> T {
          constexpr T max_shift = sizeof(T) * 8;
          if (static_cast<std::make_signed_t<T>>(y) < 0 || y >= max_shift) return 0;
          return static_cast<T>(static_cast<std::make_unsigned_t<T>>(x) << y);
        });
      } else {
        // ... and right shifts saturate to the sign fill
        binary_loop<T, T>(o, c[0], c[1], [](T x, T y) -> T {
          constexpr T max_shift = sizeof(T) * 8 - std::is_signed_v<T>;
          if (static_cast<std::make_signed_t<T>>(y) < 0 || y >= max_shift) return static_cast<T>(x >> max_shift);
          return static_cast<T>(x >> y);
        });
      }
    });
  });
}

// isclose's compute dtype: inputs must agree (Python numbers adapt); integers compare in the default float.
DType isclose_check(const TensorList& in, const Attrs& a, const char* op) {
  const Tensor& x = in[0];
  const Tensor& y = in[1];
  bool wrapped = binary::is_wrapped(x) || binary::is_wrapped(y);
  FLOW_RUNTIME_CHECK(wrapped || x.dtype() == y.dtype(), torch_type_name(x.dtype()), " did not match ",
                     torch_type_name(y.dtype()));
  FLOW_RUNTIME_CHECK(a.f("rtol") >= 0, op, "(): rtol must be greater than or equal to zero, but got ", a.f("rtol"));
  FLOW_RUNTIME_CHECK(a.f("atol") >= 0, op, "(): atol must be greater than or equal to zero, but got ", a.f("atol"));
  DType dt = binary::is_wrapped(x) ? y.dtype() : x.dtype();
  return is_floating(dt) ? dt : default_float_dtype();
}

void isclose_kernel(const TensorList& in, const Tensor& out, const Attrs& a) {
  DType ct = isclose_check(in, a, "isclose");
  const double rtol = a.f("rtol"), atol = a.f("atol");
  const bool equal_nan = a.b("equal_nan");
  with_compute_dtype(in, out, ct, DType::Bool, [&](const Tensor& o, const TensorList& c) {
    dispatch_floating(ct, "isclose", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = acc_t<T>;
      const A rt = static_cast<A>(rtol), at = static_cast<A>(atol);
      binary_loop<bool, T>(o, c[0], c[1], [rt, at, equal_nan](A x, A y) -> bool {
        if (x == y) return true;
        if (equal_nan && std::isnan(x) && std::isnan(y)) return true;
        A err = std::abs(x - y);
        return std::isfinite(err) && err <= at + std::abs(rt * y);
      });
    });
  });
}

// true when every element of a bool tensor is set
bool all_true(const Tensor& b) {
  std::atomic<bool> any_false{false};
  for_each_element<1>({&b}, b.sizes(), [&any_false](std::array<char*, 1> p, std::array<int64_t, 1> s, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
      if (!*reinterpret_cast<const bool*>(p[0] + i * s[0])) {
        any_false.store(true, std::memory_order_relaxed);
        return;
      }
  });
  return !any_false.load();
}

Tensor bool_scalar(bool v) { return ops::scalar_tensor(Scalar(v), DType::Bool); }

}  // namespace

#define FLOW_COMPARE_OP(NAME, C)                                                  \
  FLOW_OP(NAME)                                                                   \
      .schema(#NAME "(Tensor self, Tensor other) -> Tensor")                      \
      .traits(kElementwise | kBroadcastBinary | kComparison | kNonDifferentiable) \
      .meta(meta_compare)                                                         \
      .cpu_out(compare_kernel<C>)                                                 \
      .inplace_variant();

FLOW_COMPARE_OP(eq, Cmp::Eq)
FLOW_COMPARE_OP(ne, Cmp::Ne)
FLOW_COMPARE_OP(lt, Cmp::Lt)
FLOW_COMPARE_OP(le, Cmp::Le)
FLOW_COMPARE_OP(gt, Cmp::Gt)
FLOW_COMPARE_OP(ge, Cmp::Ge)
#undef FLOW_COMPARE_OP

FLOW_OP(logical_and)
    .schema("logical_and(Tensor self, Tensor other) -> Tensor")
    .traits(kElementwise | kBroadcastBinary | kNonDifferentiable)
    .meta(meta_compare)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      logical_kernel(in, out, [](uint8_t x, uint8_t y) { return static_cast<uint8_t>(x & y); });
    })
    .inplace_variant();

FLOW_OP(logical_or)
    .schema("logical_or(Tensor self, Tensor other) -> Tensor")
    .traits(kElementwise | kBroadcastBinary | kNonDifferentiable)
    .meta(meta_compare)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      logical_kernel(in, out, [](uint8_t x, uint8_t y) { return static_cast<uint8_t>(x | y); });
    })
    .inplace_variant();

FLOW_OP(logical_xor)
    .schema("logical_xor(Tensor self, Tensor other) -> Tensor")
    .traits(kElementwise | kBroadcastBinary | kNonDifferentiable)
    .meta(meta_compare)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      logical_kernel(in, out, [](uint8_t x, uint8_t y) { return static_cast<uint8_t>(x ^ y); });
    })
    .inplace_variant();

#define FLOW_BITWISE_OP(NAME, B, KERNEL, WITH_BOOL)                 \
  FLOW_OP(NAME)                                                     \
      .schema(#NAME "(Tensor self, Tensor other) -> Tensor")        \
      .traits(kElementwise | kBroadcastBinary | kNonDifferentiable) \
      .meta(meta_integral(KERNEL, WITH_BOOL))                       \
      .cpu_out(bitwise_kernel<B>)                                   \
      .inplace_variant();

FLOW_BITWISE_OP(bitwise_and, Bit::And, "bitwise_and_cpu", true)
FLOW_BITWISE_OP(bitwise_or, Bit::Or, "bitwise_or_cpu", true)
FLOW_BITWISE_OP(bitwise_xor, Bit::Xor, "bitwise_xor_cpu", true)
FLOW_BITWISE_OP(bitwise_left_shift, Bit::Lshift, "lshift_cpu", false)
FLOW_BITWISE_OP(bitwise_right_shift, Bit::Rshift, "rshift_cpu", false)
#undef FLOW_BITWISE_OP

FLOW_OP(isclose)
    .schema("isclose(Tensor self, Tensor other, float rtol=1e-05, float atol=1e-08, bool equal_nan=False) -> Tensor")
    .traits(kElementwise | kBroadcastBinary | kComparison | kNonDifferentiable)
    .meta([](const TensorList& in, const Attrs& a) {
      isclose_check(in, a, "isclose");
      return meta_compare(in, a);
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) { isclose_kernel(in, out[0], a); });

// Whole-tensor tests: a 0-dim bool tensor (the Python functions return a bool).
FLOW_OP(allclose)
    .schema("allclose(Tensor self, Tensor other, float rtol=1e-05, float atol=1e-08, bool equal_nan=False) -> Tensor")
    .traits(kComparison | kNonDifferentiable)
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      Shape s = broadcast_shapes(in[0].sizes(), in[1].sizes(), "allclose");
      Tensor close = empty(s, DType::Bool, in[0].device());
      isclose_kernel(in, close, a);
      return {bool_scalar(all_true(close))};
    });

FLOW_OP(equal)
    .schema("equal(Tensor self, Tensor other) -> Tensor")
    .traits(kComparison | kNonDifferentiable)
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      common_device(in, "equal");
      if (in[0].sizes() != in[1].sizes()) return {bool_scalar(false)};
      Tensor same = empty(in[0].sizes(), DType::Bool, in[0].device());
      compare_kernel<Cmp::Eq>(in, {same}, a);
      return {bool_scalar(all_true(same))};
    });

}  // namespace flow
