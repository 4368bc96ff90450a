// First-order gradients of the norms and pointwise losses written as compositions of registered ops.
// The forward ops' backwards use these instead of their fused backward helpers when grad mode is on
// (backward(create_graph=True) / autograd.grad(..., create_graph=True)), so the gradient is itself
// differentiable to any order; plain first-order training keeps the fused kernels. The normalisation
// statistics are recomputed from the input here (not read from the forward's saved mean/invstd), so
// the second derivative includes their dependence on the input, as in torch's batchnorm_double_backward.
#include "nnops_grad_composite.h"

#include "reduce.h"
#include "unary_common.h"

namespace flow::nn {
namespace {

Tensor num(double v) { return ops::wrapped_scalar(Scalar(v)); }
Tensor cmp(const char* op, const Tensor& a, double v) { return ops::call1(op, {a, num(v)}); }

struct Normed {
  Tensor xhat, invstd;
};
// xhat = (x - mean) * rsqrt(var + eps) over `dims` (biased variance), both kept with reduced dims as 1.
Normed normalise(const Tensor& x, const std::vector<int64_t>& dims, double eps) {
  Tensor xc = ops::sub(x, ops::mean(x, dims, true));
  Tensor invstd = ops::rsqrt(ops::add(ops::mean(ops::square(xc), dims, true), Scalar(eps)));
  return {ops::mul(xc, invstd), invstd};
}

// invstd * (wg - mean(wg) - xhat * mean(wg * xhat)) over `dims`.
Tensor norm_input_grad(const Tensor& wg, const Normed& n, const std::vector<int64_t>& dims) {
  Tensor r = ops::sub(wg, ops::mean(wg, dims, true));
  r = ops::sub(r, ops::mul(n.xhat, ops::mean(ops::mul(wg, n.xhat), dims, true)));
  return ops::mul(r, n.invstd);
}

// (1, C, 1, ...) view of a per-channel tensor for an input of `dim` dims.
Tensor channel_view(const Tensor& p, int64_t dim) {
  Shape s(static_cast<size_t>(dim), 1);
  s[1] = p.numel();
  return ops::reshape(p, s);
}

std::vector<int64_t> non_channel_dims(int64_t dim) {
  std::vector<int64_t> d{0};
  for (int64_t i = 2; i < dim; ++i) d.push_back(i);
  return d;
}

}  // namespace

TensorList batch_norm_grad_composite(const Tensor& g, const Tensor& x, const Tensor& w, const Tensor& save_mean,
                                     const Tensor& save_invstd, bool training, double eps) {
  const int64_t D = x.dim();
  std::vector<int64_t> dims = non_channel_dims(D);
  Normed n;
  if (training) {
    n = normalise(x, dims, eps);
  } else {  // running statistics: constants with respect to the input
    n.invstd = channel_view(ops::to_dtype(save_invstd, x.dtype()), D);
    n.xhat = ops::mul(ops::sub(x, channel_view(ops::to_dtype(save_mean, x.dtype()), D)), n.invstd);
  }
  Tensor wg = w.defined() ? ops::mul(g, channel_view(w, D)) : g;
  Tensor gx = training ? norm_input_grad(wg, n, dims) : ops::mul(wg, n.invstd);
  return {gx, ops::sum(ops::mul(g, n.xhat), dims), ops::sum(g, dims)};
}

TensorList layer_norm_grad_composite(const Tensor& g, const Tensor& x, const Tensor& w,
                                     const std::vector<int64_t>& normalized_shape, double eps) {
  std::vector<int64_t> dims;
  for (int64_t i = x.dim() - static_cast<int64_t>(normalized_shape.size()); i < x.dim(); ++i) dims.push_back(i);
  Normed n = normalise(x, dims, eps);
  Tensor wg = w.defined() ? ops::mul(g, w) : g;
  Shape ps(normalized_shape.begin(), normalized_shape.end());
  return {norm_input_grad(wg, n, dims), ops::sum_to(ops::mul(g, n.xhat), ps), ops::sum_to(g, ps)};
}

TensorList group_norm_grad_composite(const Tensor& g, const Tensor& x, const Tensor& w, int64_t group, double eps) {
  const int64_t D = x.dim(), N = x.size(0);
  Shape grouped{N, group, -1};
  Normed n = normalise(ops::reshape(x, grouped), {2}, eps);
  Tensor xhat = ops::reshape(n.xhat, x.sizes());
  Tensor wg = w.defined() ? ops::mul(g, channel_view(w, D)) : g;
  Tensor gx = ops::reshape(norm_input_grad(ops::reshape(wg, grouped), n, {2}), x.sizes());
  std::vector<int64_t> dims = non_channel_dims(D);
  return {gx, ops::sum(ops::mul(g, xhat), dims), ops::sum(g, dims)};
}

TensorList pointwise_loss_grad_composite(const Tensor& grad, const Tensor& x, const Tensor& t, const Tensor& w,
                                         const Tensor& pw, const std::string& kind, bool mean_reduction, double param) {
  Tensor dx, dt;
  if (kind == "mse") {
    dx = ops::mul(ops::sub(x, t), Scalar(2.0));
  } else if (kind == "l1") {
    dx = ops::sign(ops::sub(x, t));
  } else if (kind == "smooth_l1" || kind == "huber") {
    Tensor z = ops::sub(x, t);
    Tensor inner = kind == "smooth_l1" ? ops::mul(z, Scalar(1.0 / param)) : z;
    Tensor outer = kind == "smooth_l1" ? ops::sign(z) : ops::mul(ops::sign(z), Scalar(param));
    dx = ops::where(cmp("lt", ops::unary("abs", z), param), inner, outer);
  } else if (kind == "bce") {
    Tensor den = ops::call1("clamp_min", {ops::mul(ops::rsub(Scalar(1.0), x), x)}, {Scalar(1e-12)});
    dx = ops::div(ops::sub(x, t), den);
    Tensor l1x = ops::call1("clamp_min", {ops::unary("log1p", ops::neg(x))}, {Scalar(-100.0)});
    Tensor lx = ops::call1("clamp_min", {ops::unary("log", x)}, {Scalar(-100.0)});
    dt = ops::sub(l1x, lx);
  } else if (kind == "bce_logits") {
    Tensor sig = ops::sigmoid(x);
    if (pw.defined()) {
      Tensor pt = ops::mul(pw, t);
      dx = ops::sub(ops::mul(ops::add(ops::rsub(Scalar(1.0), t), pt), sig), pt);
      Tensor sp = ops::call1("softplus", {ops::neg(x)}, {Scalar(1.0), Scalar(20.0)});
      dt = ops::add(ops::neg(x), ops::mul(ops::sub(pw, Scalar(1.0)), sp));
    } else {
      dx = ops::sub(sig, t);
      dt = ops::neg(x);
    }
  } else if (kind == "kl_div") {
    dx = ops::neg(t);
    // as torch's xlogy(t, t) - t * x decomposition: t / t is nan at t == 0
    Tensor lt = ops::where(cmp("ne", t, 0.0), ops::unary("log", t), ops::zeros_like(t));
    dt = ops::sub(ops::add(lt, ops::div(t, t)), x);
  } else if (kind == "kl_div_log") {
    Tensor e = ops::exp(t);
    dx = ops::neg(e);
    dt = ops::mul(e, ops::add(ops::sub(t, x), Scalar(1.0)));
  } else {
    fail(ErrorKind::Value, "unknown pointwise loss '", kind, "'");
  }
  if (!dt.defined()) dt = ops::neg(dx);
  if (w.defined() && (kind == "bce" || kind == "bce_logits")) dx = ops::mul(dx, w), dt = ops::mul(dt, w);
  Tensor gs = grad;
  if (mean_reduction) {
    Shape s =
        broadcast_shapes(broadcast_shapes(x.sizes(), t.sizes(), "loss"), w.defined() ? w.sizes() : Shape{}, "loss");
    if (pw.defined()) s = broadcast_shapes(s, pw.sizes(), "loss");
    gs = ops::div(grad, num(static_cast<double>(shape_numel(s))));
  }
  return {ops::mul(gs, dx), ops::mul(gs, dt)};
}

}  // namespace flow::nn
