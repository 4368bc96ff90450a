"""nn.utils.fuse_conv_bn_eval / fuse_linear_bn_eval: the fused layer computes bn(layer(x)) (checked against
the unfused pair and torch's fusion), for plain and transposed convolutions, with and without biases."""
import numpy as np
import pytest
import torch

import oneflow as flow


def trained_bn(bn, channels, rng):
    with flow.no_grad():
        bn.running_mean.copy_(flow.tensor(rng.standard_normal(channels).astype(np.float32)))
        bn.running_var.copy_(flow.tensor(rng.uniform(0.5, 2.0, channels).astype(np.float32)))
        if bn.weight is not None:
            bn.weight.copy_(flow.tensor(rng.standard_normal(channels).astype(np.float32)))
            bn.bias.copy_(flow.tensor(rng.standard_normal(channels).astype(np.float32)))
    return bn.eval()


@pytest.mark.parametrize("transpose,bias,affine", [(False, True, True), (False, False, True), (True, True, False)])
def test_fused_conv_equals_conv_then_bn_and_torch(transpose, bias, affine):
    rng = np.random.default_rng(0)
    Conv = flow.nn.ConvTranspose2d if transpose else flow.nn.Conv2d
    conv = Conv(3, 5, 3, bias=bias).eval()
    bn = trained_bn(flow.nn.BatchNorm2d(5, affine=affine), 5, rng)
    x = flow.tensor(rng.standard_normal((2, 3, 6, 6)).astype(np.float32))
    fused = flow.nn.utils.fuse_conv_bn_eval(conv, bn, transpose=transpose)
    assert isinstance(fused.weight, flow.nn.Parameter) and fused is not conv
    np.testing.assert_allclose(fused(x).detach().numpy(), bn(conv(x)).detach().numpy(), rtol=1e-4, atol=1e-5)
    def tt(t):
        return None if t is None else torch.tensor(t.detach().numpy())
    tw, tb = torch.nn.utils.fuse_conv_bn_weights(tt(conv.weight), tt(conv.bias), tt(bn.running_mean),
                                                 tt(bn.running_var), bn.eps, tt(bn.weight), tt(bn.bias), transpose)
    np.testing.assert_allclose(fused.weight.detach().numpy(), tw.detach().numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(fused.bias.detach().numpy(), tb.detach().numpy(), rtol=1e-6, atol=1e-7)


def test_fused_linear_equals_linear_then_bn_and_needs_eval():
    rng = np.random.default_rng(1)
    lin = flow.nn.Linear(4, 6).eval()
    bn = trained_bn(flow.nn.BatchNorm1d(6), 6, rng)
    x = flow.tensor(rng.standard_normal((3, 4)).astype(np.float32))
    fused = flow.nn.utils.fuse_linear_bn_eval(lin, bn)
    np.testing.assert_allclose(fused(x).detach().numpy(), bn(lin(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        flow.nn.utils.fuse_linear_bn_eval(lin.train(), bn)
    with pytest.raises(AssertionError, match="linear.out_features == bn.num_features"):
        flow.nn.utils.fuse_linear_bn_eval(flow.nn.Linear(4, 5).eval(), bn)
