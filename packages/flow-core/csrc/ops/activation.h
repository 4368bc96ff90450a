// Shared by activation.cpp and activation_backward.cpp: wrappers for the fused backward helpers.
#pragma once
#include "unary_vec.h"

namespace flow::ops {
inline Tensor sigmoid_backward(const Tensor& g, const Tensor& y) { return call1("sigmoid_backward", {g, y}); }
inline Tensor tanh_backward(const Tensor& g, const Tensor& y) { return call1("tanh_backward", {g, y}); }
inline Tensor silu_backward(const Tensor& g, const Tensor& x) { return call1("silu_backward", {g, x}); }
}  // namespace flow::ops
