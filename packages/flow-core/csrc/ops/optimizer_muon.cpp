// Muon's fused update (PyTorch's torch.optim.Muon): SGD momentum (Nesterov by default) whose update matrix is
// orthogonalised by a quintic Newton-Schulz iteration, run in bfloat16 as PyTorch runs it. The iteration is a
// handful of matrix products per parameter, so the update is written with registry ops (matmul in bfloat16)
// inside one op per parameter group, which keeps the optimizer's one-op-per-group shape.
#include <cmath>
#include <string>

#include "functions.h"
#include "linalg.h"
#include "optimizer_common.h"

namespace flow {
namespace {

// X / max(||X||_F, eps) rounded as PyTorch's bfloat16 norm, clamp and division round it.
Tensor normalise(const Tensor& x, double eps) {
  Tensor f = ops::contiguous(ops::to_dtype(x, DType::Float32));
  const float* p = f.data<float>();
  double s = 0;
  for (int64_t i = 0; i < f.numel(); ++i) s += double(p[i]) * double(p[i]);
  const float norm = static_cast<float>(BFloat16(static_cast<float>(std::sqrt(s))));
  const float clamped = static_cast<float>(BFloat16(std::max(norm, static_cast<float>(BFloat16(float(eps))))));
  return ops::div(x, ops::scalar_tensor(Scalar(double(clamped)), DType::BFloat16));
}

// The quintic Newton-Schulz iteration X <- a X + (b G + c G^2) X with G = X X^T, on the wide orientation.
Tensor orthogonalise(const Tensor& update, double a, double b, double c, int64_t steps, double eps) {
  const bool tall = update.size(0) > update.size(1);
  Tensor x = ops::to_dtype(update, DType::BFloat16);
  if (tall) x = ops::transpose(x, 0, 1);
  x = normalise(x, eps);
  for (int64_t k = 0; k < steps; ++k) {
    Tensor gram = ops::mm(x, ops::transpose(x, 0, 1));
    Tensor poly = ops::call1("addmm", {gram, gram, gram}, {Scalar(b), Scalar(c)});
    x = ops::call1("addmm", {x, poly, x}, {Scalar(a), Scalar(int64_t(1))});
  }
  return tall ? ops::transpose(x, 0, 1) : x;
}

double adjusted_lr(double lr, const std::string& fn, int64_t rows, int64_t cols) {
  if (fn.empty() || fn == "original") return lr * std::sqrt(std::max(1.0, double(rows) / double(cols)));
  if (fn == "match_rms_adamw") return lr * 0.2 * std::sqrt(double(std::max(rows, cols)));
  return lr;
}

}  // namespace

// Muon: params are 2-D.
FLOW_OP(muon_update_)
    .schema(
        "muon_update_(Tensor[] params, Tensor[] grads, Tensor[] momentum_buffers, Tensor lr, *, "
        "float weight_decay=0.1, float momentum=0.95, bool nesterov=True, "
        "float[] ns_coefficients=[3.4445, -4.775, 2.0315], float eps=1e-07, int ns_steps=5, "
        "str adjust_lr_fn=\"\") -> Tensor[]")
    .traits(kOptimizer | kNonDifferentiable)
    .meta(optim::no_output_meta)
    .cpu([](const TensorList& in, const Attrs& at) -> TensorList {
      using optim::Role;
      const double wd = at.f("weight_decay"), momentum = at.f("momentum"), eps = at.f("eps");
      const bool nesterov = at.b("nesterov");
      const std::vector<double>& coef = at.floats("ns_coefficients");
      const int64_t steps = at.i("ns_steps");
      const char* op = "muon_update_";
      FLOW_RUNTIME_CHECK(coef.size() == 3, op, ": ns_coefficients must have exactly 3 values");
      FLOW_RUNTIME_CHECK(steps < 100, op, ": Number of steps must be less than 100 for computational efficiency");
      for (const Tensor& grad : split_inputs(in, at)[1])  // PyTorch's check, before the shapes are compared
        FLOW_RUNTIME_CHECK(grad.defined() && grad.dim() == 2, "Param gradient must be a 2D matrix");
      optim::Update u = optim::begin_update(in, at, {Role::Param, Role::Grad, Role::State});
      const optim::Group& g = u.g;
      const double lr = u.lr;
      for (int64_t p = 0; p < g.size(); ++p) {
        const Tensor &w = g.at(p, 0), &gw = g.at(p, 1), &buf = g.at(p, 2);
        // buf = lerp(buf, g, 1 - momentum); the update is lerp(g, buf, momentum) (Nesterov) or buf
        ops::copy_into(buf, ops::call1("lerp", {buf, gw, ops::scalar_tensor(Scalar(1 - momentum), buf.dtype())}));
        Tensor update =
            nesterov ? ops::call1("lerp", {gw, buf, ops::scalar_tensor(Scalar(momentum), buf.dtype())}) : buf;
        Tensor ortho = orthogonalise(update, coef[0], coef[1], coef[2], steps, eps);
        const double step_lr = adjusted_lr(lr, at.str("adjust_lr_fn"), w.size(0), w.size(1));
        Tensor decayed = ops::mul(w, Scalar(1 - lr * wd));
        ops::copy_into(w, ops::add(decayed, ops::to_dtype(ortho, w.dtype()), Scalar(-step_lr)));
      }
      g.finish();
      return optim::no_outputs();
    });

}  // namespace flow
