// A Python number carried into C++: bool, int or float, remembering which.
#pragma once
#include <cstdint>
#include <string>

#include "dtype.h"

namespace flow {

struct Scalar {
  enum class Kind : int8_t { Bool, Int, Float };
  Kind kind = Kind::Int;
  union {
    bool b;
    int64_t i;
    double d;
  } v{};

  Scalar() { v.i = 0; }
  Scalar(bool b) : kind(Kind::Bool) { v.b = b; }
  Scalar(int v_) : Scalar(static_cast<int64_t>(v_)) {}
  Scalar(int64_t i) : kind(Kind::Int) { v.i = i; }
  Scalar(double d) : kind(Kind::Float) { v.d = d; }

  bool is_bool() const { return kind == Kind::Bool; }
  bool is_int() const { return kind == Kind::Int; }
  bool is_float() const { return kind == Kind::Float; }
  double to_double() const { return kind == Kind::Float ? v.d : kind == Kind::Int ? double(v.i) : double(v.b); }
  int64_t to_int() const { return kind == Kind::Float ? int64_t(v.d) : kind == Kind::Int ? v.i : int64_t(v.b); }
  template <typename T>
  T to() const {
    if constexpr (std::is_same_v<T, bool>) return kind == Kind::Float ? v.d != 0 : kind == Kind::Int ? v.i != 0 : v.b;
    else if constexpr (std::is_integral_v<T>) return static_cast<T>(to_int());
    else return T(to_double());
  }
  // The dtype a tensor made from this number gets (default float for floats).
  DType natural_dtype() const {
    return kind == Kind::Bool ? DType::Bool : kind == Kind::Int ? DType::Int64 : default_float_dtype();
  }
  std::string str() const {
    return kind == Kind::Float ? std::to_string(v.d)
           : kind == Kind::Int ? std::to_string(v.i)
                               : (v.b ? "True" : "False");
  }
};

// PyTorch's C++ name of a dtype's element type ("uint8_t", "int", "c10::Half"), as its overflow errors print it.
const char* c_type_name(DType t);
// Raises PyTorch's "value cannot be converted to type <T> without overflow" when the number cannot be stored in
// a tensor of dtype t (fill_, full, masked_fill, clamp bounds, ...); arithmetic with a number wraps instead.
void check_scalar_fits(const Scalar& s, DType t);

}  // namespace flow
