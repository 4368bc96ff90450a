// Element types, their C++ types, PyTorch's promotion lattice and dispatch helpers.
#pragma once
#include <cstdint>
#include <string>

#include "error.h"
#include "half.h"

namespace flow {

// Order matters: promotion tables index by it.
enum class DType : int8_t { Bool, UInt8, Int8, Int16, Int32, Int64, Float16, BFloat16, Float32, Float64 };
constexpr int kNumDTypes = 10;

int64_t itemsize(DType t);
const char* dtype_name(DType t);  // "float32"
inline bool is_floating(DType t) { return t >= DType::Float16; }
inline bool is_integral(DType t, bool include_bool = false) {
  return (t >= DType::UInt8 && t <= DType::Int64) || (include_bool && t == DType::Bool);
}
// PyTorch's canCast, for results written into an existing tensor (in-place ops, out=): no float ->
// integral, no non-bool -> bool.
inline bool can_cast(DType from, DType to) {
  if (is_floating(from) && !is_floating(to)) return false;
  if (from != DType::Bool && to == DType::Bool) return false;
  return true;
}

// PyTorch's promote_types.
DType promote_types(DType a, DType b);
DType default_float_dtype();
// PyTorch's scalar-type names ("Long", "Float") as its "not implemented for 'Long'" errors print them.
const char* torch_type_name(DType t);
// Raises NotImplementedError in PyTorch's words: "<kernel>" not implemented for '<Type>'.
[[noreturn]] void fail_not_implemented(const char* kernel, DType t);
void set_default_float_dtype(DType t);

template <DType D>
struct CppType;
#define FLOW_CPP_TYPE(D, T)  \
  template <>                \
  struct CppType<DType::D> { \
    using type = T;          \
  };
FLOW_CPP_TYPE(Bool, bool)
FLOW_CPP_TYPE(UInt8, uint8_t)
FLOW_CPP_TYPE(Int8, int8_t)
FLOW_CPP_TYPE(Int16, int16_t)
FLOW_CPP_TYPE(Int32, int32_t)
FLOW_CPP_TYPE(Int64, int64_t)
FLOW_CPP_TYPE(Float16, Half)
FLOW_CPP_TYPE(BFloat16, BFloat16)
FLOW_CPP_TYPE(Float32, float)
FLOW_CPP_TYPE(Float64, double)
#undef FLOW_CPP_TYPE

template <typename T>
struct DTypeOf;
#define FLOW_DTYPE_OF(D, T)                  \
  template <>                                \
  struct DTypeOf<T> {                        \
    static constexpr DType value = DType::D; \
  };
FLOW_DTYPE_OF(Bool, bool)
FLOW_DTYPE_OF(UInt8, uint8_t)
FLOW_DTYPE_OF(Int8, int8_t)
FLOW_DTYPE_OF(Int16, int16_t)
FLOW_DTYPE_OF(Int32, int32_t)
FLOW_DTYPE_OF(Int64, int64_t)
FLOW_DTYPE_OF(Float16, Half)
FLOW_DTYPE_OF(BFloat16, BFloat16)
FLOW_DTYPE_OF(Float32, float)
FLOW_DTYPE_OF(Float64, double)
#undef FLOW_DTYPE_OF

// The type arithmetic is done in: float for the 16-bit floats, the type itself otherwise.
template <typename T>
struct AccType {
  using type = T;
};
template <> struct AccType<Half> {
  using type = float;
};
template <> struct AccType<BFloat16> {
  using type = float;
};
template <typename T>
using acc_t = typename AccType<T>::type;

template <typename T>
struct TypeTag {
  using type = T;
};

// Dispatch helpers: call f(TypeTag<T>{}) for the C++ type of `t`. `op` names the caller in errors.
#define FLOW_DT_CASE(D) \
  case DType::D: return f(TypeTag<typename CppType<DType::D>::type>{});

// The case lists are macros, several to a line (clang-format would break them as statements).
// clang-format off
template <typename F>
decltype(auto) dispatch_all(DType t, const char* op, F&& f) {
  switch (t) {
    FLOW_DT_CASE(Bool) FLOW_DT_CASE(UInt8) FLOW_DT_CASE(Int8) FLOW_DT_CASE(Int16) FLOW_DT_CASE(Int32)
    FLOW_DT_CASE(Int64) FLOW_DT_CASE(Float16) FLOW_DT_CASE(BFloat16) FLOW_DT_CASE(Float32) FLOW_DT_CASE(Float64)
  }
  fail(ErrorKind::Type, op, ": unsupported dtype");
}
template <typename F>
decltype(auto) dispatch_floating(DType t, const char* op, F&& f) {
  switch (t) {
    FLOW_DT_CASE(Float16) FLOW_DT_CASE(BFloat16) FLOW_DT_CASE(Float32) FLOW_DT_CASE(Float64)
    default: break;
  }
  fail(ErrorKind::Type, op, ": expected a floating point tensor, got ", dtype_name(t));
}
// Integers and floats, no bool.
template <typename F>
decltype(auto) dispatch_numeric(DType t, const char* op, F&& f) {
  switch (t) {
    FLOW_DT_CASE(UInt8) FLOW_DT_CASE(Int8) FLOW_DT_CASE(Int16) FLOW_DT_CASE(Int32) FLOW_DT_CASE(Int64)
    FLOW_DT_CASE(Float16) FLOW_DT_CASE(BFloat16) FLOW_DT_CASE(Float32) FLOW_DT_CASE(Float64)
    default: break;
  }
  fail(ErrorKind::Type, op, ": not supported for ", dtype_name(t));
}
template <typename F>
decltype(auto) dispatch_integral(DType t, const char* op, F&& f, bool with_bool = true) {
  switch (t) {
    case DType::Bool:
      if (with_bool) return f(TypeTag<bool>{});
      break;
    FLOW_DT_CASE(UInt8) FLOW_DT_CASE(Int8) FLOW_DT_CASE(Int16) FLOW_DT_CASE(Int32) FLOW_DT_CASE(Int64)
    default: break;
  }
  fail(ErrorKind::Type, op, ": expected an integral tensor, got ", dtype_name(t));
}
// clang-format on
#undef FLOW_DT_CASE

}  // namespace flow
