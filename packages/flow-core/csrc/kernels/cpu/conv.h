// Convolution kernels (1-D/2-D/3-D, grouped, strided, dilated). float32 runs oneDNN primitives (cached by
// shape) or, for the shapes where they measured faster, Winograd (winograd.h) or im2col + sgemm; float64
// runs im2col + GEMM; 16-bit floats go through float32. Inputs may be strided; outputs are contiguous
// tensors the caller allocated.
#pragma once
#include <vector>

#include "../../core/tensor.h"

namespace flow {

struct ConvGeom {
  std::vector<int64_t> stride, padding, dilation;  // one per spatial dim
  int64_t groups = 1;
};

// y = conv(x, w) (+ b when defined)
void conv_forward(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y, const ConvGeom& g);
// gx = conv^T(gy, w): the gradient w.r.t. the input (also conv_transpose's forward)
void conv_backward_data(const Tensor& gy, const Tensor& w, const Tensor& gx, const ConvGeom& g);
// gw = gradient w.r.t. the weight of conv(x, w) given gy
void conv_backward_weight(const Tensor& gy, const Tensor& x, const Tensor& gw, const ConvGeom& g);

// oneDNN float32 paths (onednn_conv.cpp); all tensors contiguous float32.
void onednn_conv_forward(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y, const ConvGeom& g);
void onednn_conv_backward_data(const Tensor& gy, const Tensor& w, const Tensor& gx, const ConvGeom& g);
void onednn_conv_backward_weight(const Tensor& gy, const Tensor& x, const Tensor& gw, const ConvGeom& g);

}  // namespace flow
