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

// Prepacked weights for repeated forwards over one geometry (inference, where the weight stays put): the
// forward kernel that conv_forward picks for these shapes keeps its weights in a layout of its own (oneDNN's
// blocked layouts, Winograd's transformed weights), and a weight packed once into that layout spares each call
// the reorder or transform (ResNet-18 at batch 32: 512->512 3x3, 4x4 images, ~3 ms of reorder against ~12 ms
// of product per call). Where the kernel reads the plain weight (im2col), the packed form is the plain weight. The
// packed tensor is one-dimensional, in the weight's dtype; only conv_forward_packed with the same geometry reads it.
// `x`, `w`, `y`: the input, weight and output sizes; `bias`: whether the forward adds one.
int64_t conv_packed_weight_numel(const Shape& x, const Shape& w, const Shape& y, const ConvGeom& g, DType dt,
                                 bool bias);
// Whether packing changes anything for these shapes (a Winograd forward, or a oneDNN forward that reorders its
// weight).
bool conv_weight_packing_pays(const Shape& x, const Shape& w, const Shape& y, const ConvGeom& g, DType dt, bool bias);
void conv_pack_weight(const Tensor& w, const Shape& x, const Shape& y, const ConvGeom& g, bool bias,
                      const Tensor& packed);
// y = conv(x, w) (+ b) with w given packed by conv_pack_weight for x's and y's sizes; `w_sizes` its shape.
void conv_forward_packed(const Tensor& x, const Tensor& packed, const Shape& w_sizes, const Tensor& b, const Tensor& y,
                         const ConvGeom& g);

// oneDNN float32 paths (onednn_conv.cpp); all tensors contiguous float32.
void onednn_conv_forward(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y, const ConvGeom& g);
void onednn_conv_backward_data(const Tensor& gy, const Tensor& w, const Tensor& gx, const ConvGeom& g);
void onednn_conv_backward_weight(const Tensor& gy, const Tensor& x, const Tensor& gw, const ConvGeom& g);
// The forward primitive's weight layout for these shapes: its bytes when it differs from the plain weight
// (a reorder per call), else 0; the packed forward takes the weight in that layout.
int64_t onednn_conv_packed_weight_bytes(const Shape& x, const Shape& w, const Shape& y, const ConvGeom& g, bool bias);
void onednn_conv_pack_weight(const Tensor& w, const Shape& x, const Shape& y, const ConvGeom& g, bool bias,
                             const Tensor& packed);
void onednn_conv_forward_packed(const Tensor& x, const Tensor& packed, const Shape& w_sizes, const Tensor& b,
                                const Tensor& y, const ConvGeom& g);

}  // namespace flow
