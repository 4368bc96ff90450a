// 16-bit floating types stored as raw bits; arithmetic goes through float.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace flow {

inline float bits_to_float(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
inline uint32_t float_to_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

struct BFloat16 {
  uint16_t x = 0;
  BFloat16() = default;
  BFloat16(float f) {  // round to nearest even, NaN kept quiet
    uint32_t b = float_to_bits(f);
    if (std::isnan(f)) {
      x = 0x7FC0;
    } else {
      uint32_t lsb = (b >> 16) & 1u;
      b += 0x7FFFu + lsb;
      x = static_cast<uint16_t>(b >> 16);
    }
  }
  BFloat16(double d) : BFloat16(static_cast<float>(d)) {}
  template <typename I, typename = std::enable_if_t<std::is_integral_v<I>>>
  BFloat16(I v) : BFloat16(static_cast<float>(v)) {}
  operator float() const { return bits_to_float(static_cast<uint32_t>(x) << 16); }
  static BFloat16 from_bits(uint16_t b) {
    BFloat16 r;
    r.x = b;
    return r;
  }
};

struct Half {
  uint16_t x = 0;
  Half() = default;
  Half(float f) { x = from_float(f); }
  Half(double d) : Half(static_cast<float>(d)) {}
  template <typename I, typename = std::enable_if_t<std::is_integral_v<I>>>
  Half(I v) : Half(static_cast<float>(v)) {}
  operator float() const { return to_float(x); }
  static Half from_bits(uint16_t b) {
    Half r;
    r.x = b;
    return r;
  }

  static float to_float(uint16_t h) {
#if defined(__F16C__)
    return _cvtsh_ss(h);  // one instruction; the software path below is ~10x slower per element
#endif
    uint32_t sign = (h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1Fu;
    uint32_t man = h & 0x3FFu;
    if (exp == 0) {
      if (man == 0) return bits_to_float(sign);
      // subnormal: value = man * 2^-24
      float v = static_cast<float>(man) * 5.9604644775390625e-08f;
      return sign ? -v : v;
    }
    if (exp == 31) return bits_to_float(sign | 0x7F800000u | (man << 13));
    return bits_to_float(sign | ((exp + 112) << 23) | (man << 13));
  }
  static uint16_t from_float(float f) {
    uint32_t b = float_to_bits(f);
    uint32_t sign = (b >> 16) & 0x8000u;
#if defined(__F16C__)
    // the hardware rounds to nearest even, as below, and quiets a NaN keeping its payload's top bits, as
    // below and as PyTorch's (F16C) casts do
    return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
#endif
    uint32_t abs = b & 0x7FFFFFFFu;
    if (abs > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u | ((abs >> 13) & 0x3FFu));
    if (abs == 0x7F800000u) return static_cast<uint16_t>(sign | 0x7C00u);
    if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // overflow to inf
    if (abs < 0x38800000u) {                                             // subnormal or zero
      float a = bits_to_float(abs);
      // scale so that the result's unit is 2^-24, then round to nearest even
      float scaled = a * 16777216.0f;
      float r = std::nearbyint(scaled);
      return static_cast<uint16_t>(sign | static_cast<uint32_t>(r));
    }
    uint32_t mant_odd = (abs >> 13) & 1u;
    abs += 0xC8000FFFu + mant_odd;  // rebias exponent (-112 << 23) and round
    return static_cast<uint16_t>(sign | (abs >> 13));
  }
};

}  // namespace flow

namespace std {
template <>
class numeric_limits<flow::Half> {
 public:
  static constexpr bool is_specialized = true;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static flow::Half lowest() { return flow::Half::from_bits(0xFBFF); }
  static flow::Half max() { return flow::Half::from_bits(0x7BFF); }
  static flow::Half infinity() { return flow::Half::from_bits(0x7C00); }
  static flow::Half quiet_NaN() { return flow::Half::from_bits(0x7E00); }
  static flow::Half epsilon() { return flow::Half::from_bits(0x1400); }
  static flow::Half min() { return flow::Half::from_bits(0x0400); }
};
template <>
class numeric_limits<flow::BFloat16> {
 public:
  static constexpr bool is_specialized = true;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static flow::BFloat16 lowest() { return flow::BFloat16::from_bits(0xFF7F); }
  static flow::BFloat16 max() { return flow::BFloat16::from_bits(0x7F7F); }
  static flow::BFloat16 infinity() { return flow::BFloat16::from_bits(0x7F80); }
  static flow::BFloat16 quiet_NaN() { return flow::BFloat16::from_bits(0x7FC0); }
  static flow::BFloat16 epsilon() { return flow::BFloat16::from_bits(0x3C00); }
  static flow::BFloat16 min() { return flow::BFloat16::from_bits(0x0080); }
};
}  // namespace std
