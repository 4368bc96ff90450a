#include "dtype.h"

namespace flow {

int64_t itemsize(DType t) {
  static constexpr int64_t sizes[] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8};
  return sizes[static_cast<int>(t)];
}

const char* dtype_name(DType t) {
  static constexpr const char* names[] = {"bool",  "uint8",   "int8",     "int16",   "int32",
                                          "int64", "float16", "bfloat16", "float32", "float64"};
  return names[static_cast<int>(t)];
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  // b1 u1 i1 i2 i4 i8 f2 bf f4 f8 (PyTorch's table, complex omitted)
  using D = DType;
  static constexpr D b1 = D::Bool, u1 = D::UInt8, i1 = D::Int8, i2 = D::Int16, i4 = D::Int32, i8 = D::Int64,
                     f2 = D::Float16, bf = D::BFloat16, f4 = D::Float32, f8 = D::Float64;
  static constexpr D table[kNumDTypes][kNumDTypes] = {
      /* b1 */ {b1, u1, i1, i2, i4, i8, f2, bf, f4, f8},
      /* u1 */ {u1, u1, i2, i2, i4, i8, f2, bf, f4, f8},
      /* i1 */ {i1, i2, i1, i2, i4, i8, f2, bf, f4, f8},
      /* i2 */ {i2, i2, i2, i2, i4, i8, f2, bf, f4, f8},
      /* i4 */ {i4, i4, i4, i4, i4, i8, f2, bf, f4, f8},
      /* i8 */ {i8, i8, i8, i8, i8, i8, f2, bf, f4, f8},
      /* f2 */ {f2, f2, f2, f2, f2, f2, f2, f4, f4, f8},
      /* bf */ {bf, bf, bf, bf, bf, bf, f4, bf, f4, f8},
      /* f4 */ {f4, f4, f4, f4, f4, f4, f4, f4, f4, f8},
      /* f8 */ {f8, f8, f8, f8, f8, f8, f8, f8, f8, f8},
  };
  return table[static_cast<int>(a)][static_cast<int>(b)];
}

const char* torch_type_name(DType t) {
  static constexpr const char* names[] = {"Bool", "Byte", "Char",     "Short", "Int",
                                          "Long", "Half", "BFloat16", "Float", "Double"};
  return names[static_cast<int>(t)];
}

void fail_not_implemented(const char* kernel, DType t) {
  fail(ErrorKind::NotImplemented, "\"", kernel, "\" not implemented for '", torch_type_name(t), "'");
}

static DType g_default_float = DType::Float32;
DType default_float_dtype() { return g_default_float; }
void set_default_float_dtype(DType t) { g_default_float = t; }

}  // namespace flow
