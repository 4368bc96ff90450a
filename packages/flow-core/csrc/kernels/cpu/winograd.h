// Winograd F(2x2, 3x3) convolution for float32 (Lavin & Gray): each 2x2 block of outputs comes from a 4x4
// input tile with 16 multiplies per channel pair where the direct form needs 36. The 16 element-wise
// products of a tile are 16 independent GEMMs (output channels x input channels x tiles), run on the packed
// sgemm's register block. oneDNN 3.2 offers Winograd only with AVX-512, and 3x3 stride-1 layers are most of
// a ResNet's work in all three passes: backward-data is the same convolution of the output gradient with the
// kernel rotated and its channels swapped; backward-weight sums, over tiles, the products of the transformed
// output gradient and input, and maps that sum back through the weight transform's transpose.
// The transforms mix a tile's values, so a non-finite input spreads further than in the direct form: to the
// rest of its 2x2 output block, and in the weight gradient to all nine taps of the channel pairs it meets
// (cuDNN's Winograd behaves the same way).
#pragma once
#include "conv.h"

namespace flow {

// Whether the Winograd path serves this float32 convolution: 2-D, 3x3 kernel, stride 1, dilation 1, one
// group, padding 0..2 on each side, at least 16 input and output channels, and an AVX2 + FMA build.
// `x` and `w` are the forward input's and weight's shapes; `weight_grad` asks for the backward-weight pass,
// which pays off on fewer tiles than the two passes through the weights.
bool winograd_applicable(const Shape& x, const Shape& w, const ConvGeom& g, bool weight_grad);

// y = conv(x, w) (+ b when defined); contiguous float32 operands, winograd_applicable() true.
void winograd_conv_forward(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y, const ConvGeom& g);
// The forward's transformed weights (16/9 of the weight and more: output channels padded to the register
// block), for convolutions whose weight stays put (conv.h's prepacked weights): floats of `w`'s transform,
// the transform into `packed`, and the forward reading it.
int64_t winograd_packed_weight_numel(const Shape& w);
void winograd_pack_weights(const Tensor& w, const Tensor& packed);
void winograd_conv_forward_packed(const Tensor& x, const Tensor& packed, int64_t out_channels, const Tensor& b,
                                  const Tensor& y, const ConvGeom& g);
// gx = the input gradient of conv(x, w) given gy; contiguous float32 operands, winograd_applicable() true.
void winograd_conv_backward_data(const Tensor& gy, const Tensor& w, const Tensor& gx, const ConvGeom& g);
// gw = the weight gradient of conv(x, w) given gy; contiguous float32 operands, winograd_applicable() true.
void winograd_conv_backward_weight(const Tensor& gy, const Tensor& x, const Tensor& gw, const ConvGeom& g);

}  // namespace flow
