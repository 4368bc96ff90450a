// Storing a Python number into a tensor of a given dtype, with PyTorch's overflow rule.
#include "scalar.h"

#include <cmath>
#include <limits>

#include "half.h"

namespace flow {

const char* c_type_name(DType t) {
  switch (t) {
    case DType::Bool: return "bool";
    case DType::UInt8: return "uint8_t";
    case DType::Int8: return "int8_t";
    case DType::Int16: return "int16_t";
    case DType::Int32: return "int";
    case DType::Int64: return "int64_t";
    case DType::Float16: return "c10::Half";
    case DType::BFloat16: return "c10::BFloat16";
    case DType::Float32: return "float";
    case DType::Float64: return "double";
  }
  return "?";
}

namespace {

// c10::overflows: whether v cannot be stored as T. Numbers must be in range, except that an unsigned type
// also takes negative integers (not floats) down to -max, which wrap as two's complement; a float type takes
// inf and NaN but no finite value beyond its range; bool takes anything.
template <typename T>
bool overflows(const Scalar& s) {
  if constexpr (std::is_same_v<T, bool>) {
    return false;
  } else if constexpr (std::is_integral_v<T>) {
    if (s.is_float()) {
      double d = s.to_double();
      if (!std::isfinite(d)) return true;
      return d < static_cast<double>(std::numeric_limits<T>::lowest()) ||
             d > static_cast<double>(std::numeric_limits<T>::max());
    }
    int64_t i = s.to_int();
    if constexpr (std::is_same_v<T, int64_t>) return false;
    else if constexpr (std::is_unsigned_v<T>)
      return i > int64_t(std::numeric_limits<T>::max()) || -i > int64_t(std::numeric_limits<T>::max());
    else return i < int64_t(std::numeric_limits<T>::lowest()) || i > int64_t(std::numeric_limits<T>::max());
  } else {
    double d = s.to_double();
    if (!std::isfinite(d)) return false;
    double lim = std::is_same_v<T, Half>       ? 65504.0
                 : std::is_same_v<T, BFloat16> ? 3.3895313892515355e38
                                               : static_cast<double>(std::numeric_limits<float>::max());
    if constexpr (std::is_same_v<T, double>) return false;
    return d < -lim || d > lim;
  }
}

}  // namespace

void check_scalar_fits(const Scalar& s, DType t) {
  bool bad = dispatch_all(t, "check_scalar_fits", [&](auto tag) { return overflows<typename decltype(tag)::type>(s); });
  FLOW_RUNTIME_CHECK(!bad, "value cannot be converted to type ", c_type_name(t), " without overflow");
}

}  // namespace flow
