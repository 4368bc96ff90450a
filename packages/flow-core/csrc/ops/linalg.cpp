// Matrix products: mm, bmm, addmm, baddbmm, mv, addmv, dot, vdot (kernels over batched_gemm), and the
// composites matmul and outer, whose gradients flow through the ops they are made of.
#include "linalg.h"

#include "../kernels/cpu/gemm.h"
#include "elementwise.h"

namespace flow {
namespace ops {

Tensor mm(const Tensor& a, const Tensor& b) { return call1("mm", {a, b}); }
Tensor bmm(const Tensor& a, const Tensor& b) { return call1("bmm", {a, b}); }
Tensor matmul(const Tensor& a, const Tensor& b) { return call1("matmul", {a, b}); }
Tensor mv(const Tensor& a, const Tensor& v) { return call1("mv", {a, v}); }
Tensor outer(const Tensor& a, const Tensor& b) { return call1("outer", {a, b}); }

}  // namespace ops

namespace {

// Kernel-level 3-D view (batch, rows, cols) of a matrix or vector, without autograd.
Tensor as3d(const Tensor& t, int64_t rows, int64_t cols, int64_t srow, int64_t scol, int64_t bs = 1, int64_t sb = 0) {
  return make_view(t, {bs, rows, cols}, {sb, srow, scol}, t.offset());
}
Tensor mat3d(const Tensor& t) { return as3d(t, t.size(0), t.size(1), t.stride(0), t.stride(1)); }
Tensor col3d(const Tensor& v) { return as3d(v, v.size(0), 1, v.stride(0), 1); }  // K x 1
Tensor row3d(const Tensor& v) { return as3d(v, 1, v.size(0), 1, v.stride(0)); }  // 1 x K

std::string dims_str(const Tensor& t) {
  std::string s;
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? "x" : "") + std::to_string(t.size(i));
  return s;
}

void check_same_dtype(const Tensor& a, const Tensor& b, const char* what) {
  FLOW_RUNTIME_CHECK(a.dtype() == b.dtype(), what, " to have the same dtype, but got: ", dtype_name(a.dtype()),
                     " != ", dtype_name(b.dtype()));
}

std::vector<TensorMeta> meta_mm(const TensorList& in, const Attrs&) {
  const Tensor &a = in[0], &b = in[1];
  FLOW_RUNTIME_CHECK(a.dim() == 2, "self must be a matrix");
  FLOW_RUNTIME_CHECK(b.dim() == 2, "mat2 must be a matrix");
  FLOW_RUNTIME_CHECK(a.size(1) == b.size(0), "mat1 and mat2 shapes cannot be multiplied (", dims_str(a), " and ",
                     dims_str(b), ")");
  check_same_dtype(a, b, "expected m1 and m2");
  return {{{a.size(0), b.size(1)}, a.dtype(), common_device(in, "mm")}};
}

std::vector<TensorMeta> meta_bmm(const TensorList& in, const Attrs&) {
  const Tensor &a = in[0], &b = in[1];
  FLOW_RUNTIME_CHECK(a.dim() == 3, "batch1 must be a 3D tensor");
  FLOW_RUNTIME_CHECK(b.dim() == 3, "batch2 must be a 3D tensor");
  FLOW_RUNTIME_CHECK(a.size(0) == b.size(0) && a.size(2) == b.size(1),
                     "Expected size for first two dimensions of batch2 tensor to be: [", a.size(0), ", ", a.size(2),
                     "] but got: [", b.size(0), ", ", b.size(1), "].");
  check_same_dtype(a, b, "expected batch1 and batch2");
  return {{{a.size(0), a.size(1), b.size(2)}, a.dtype(), common_device(in, "bmm")}};
}

std::vector<TensorMeta> meta_mv(const TensorList& in, const Attrs&) {
  const Tensor &a = in[0], &v = in[1];
  FLOW_RUNTIME_CHECK(a.dim() == 2 && v.dim() == 1, "vector + matrix @ vector expected, got ", 1, ", ", a.dim(), ", ",
                     v.dim());
  FLOW_RUNTIME_CHECK(a.size(1) == v.size(0), "size mismatch, got input (", a.size(0), "), mat (", dims_str(a),
                     "), vec (", v.size(0), ")");
  check_same_dtype(a, v, "expected mat and vec");
  return {{{a.size(0)}, a.dtype(), common_device(in, "mv")}};
}

std::vector<TensorMeta> meta_dot(const TensorList& in, const char* op) {
  const Tensor &a = in[0], &b = in[1];
  FLOW_RUNTIME_CHECK(a.dim() == 1 && b.dim() == 1, "1D tensors expected, but got ", a.dim(), "D and ", b.dim(),
                     "D tensors");
  FLOW_RUNTIME_CHECK(a.dtype() == b.dtype(), op, " : expected both vectors to have same dtype, but found ",
                     torch_type_name(a.dtype()), " and ", torch_type_name(b.dtype()));
  FLOW_RUNTIME_CHECK(a.size(0) == b.size(0), "inconsistent tensor size, expected tensor [", a.size(0), "] and src [",
                     b.size(0), "] to have the same number of elements, but got ", a.size(0), " and ", b.size(0),
                     " elements respectively");
  return {{{}, a.dtype(), common_device(in, op)}};
}

// addmm-style: `self` must broadcast to the product's shape and share its dtype.
void check_add_input(const Tensor& self, const TensorMeta& prod, const char* op) {
  FLOW_RUNTIME_CHECK(self.dtype() == prod.dtype, op, ": self and mat2 must have the same dtype, but got ",
                     torch_type_name(self.dtype()), " and ", torch_type_name(prod.dtype));
  Shape b = broadcast_shapes(self.sizes(), prod.sizes, op);
  FLOW_RUNTIME_CHECK(b == prod.sizes, op, ": The expanded size of the tensor must match the product's shape ",
                     shape_str(prod.sizes), ", got input of shape ", shape_str(self.sizes()));
}

// out = beta * self + alpha * A @ B (self broadcast; beta == 0 ignores self entirely, NaN included)
void add_gemm(const Tensor& self, const Tensor& A, const Tensor& B, const Tensor& out3d, const Tensor& out,
              const Attrs& a) {
  double beta = a.f("beta"), alpha = a.f("alpha");
  // A float32 bias row (linear's forward): the product is written first and the row added to it after.
  // Copying the row into every row of out and asking sgemm for beta = 1 costs more: sgemm then reads C
  // back in its inner loops (5-10% on 1024 x 256 x 1024).
  const int64_t N = out.dim() == 2 ? out.size(1) : -1;
  if (beta == 1 && N > 0 && out.dtype() == DType::Float32 && out.is_contiguous() && self.dtype() == DType::Float32 &&
      (self.sizes() == Shape{N} || self.sizes() == Shape{1, N}) && out.size(0) > 1) {
    batched_gemm(A, B, out3d, alpha, 0.0);
    const int64_t sb = self.stride(-1), M = out.size(0);
    const float* b = self.data<float>();
    float* o = out.data<float>();
    parallel_for(M, std::max<int64_t>(1, 16384 / N), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        float* row = o + r * N;
#pragma omp simd
        for (int64_t j = 0; j < N; ++j) row[j] += b[j * sb];
      }
    });
    return;
  }
  if (beta != 0) ops::copy_into(out, self);
  batched_gemm(A, B, out3d, alpha, beta);
}

// x @ y laid out like `ref` (the operand whose gradient this is): a column-major ref (a transposed weight, as
// in linear) gets (y^T @ x^T)^T, so its gradient is column-major too and flows back through the transpose as a
// contiguous tensor that AccumulateGrad can keep instead of copying.
bool is_col_major(const Tensor& t) {
  return t.dim() == 2 && t.size(0) > 1 && t.size(1) > 1 && t.stride(0) == 1 && t.stride(1) == t.size(0);
}

Tensor mm_like(const Tensor& x, const Tensor& y, const Tensor& ref) {
  if (!is_col_major(ref)) return ops::mm(x, y);
  return ops::transpose(ops::mm(ops::transpose(y, 0, 1), ops::transpose(x, 0, 1)), 0, 1);
}

Tensor scaled(const Tensor& g, const Attrs& a, const char* name) {
  Scalar s = a.s(name);
  return s.to_double() == 1.0 ? g : ops::mul(g, s);
}

}  // namespace

FLOW_OP(mm)
    .schema("mm(Tensor self, Tensor mat2) -> Tensor")
    .traits(kMatmulLike)
    .einsum("ij,jk->ik")
    .meta(meta_mm)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      batched_gemm(mat3d(in[0]), mat3d(in[1]), mat3d(out[0]), 1.0, 0.0);
    })
    .save_inputs({0, 1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {c.needs(0) ? mm_like(g[0], ops::transpose(c.input(1), 0, 1), c.input(0)) : Tensor(),
              c.needs(1) ? mm_like(ops::transpose(c.input(0), 0, 1), g[0], c.input(1)) : Tensor()};
    });

FLOW_OP(bmm)
    .schema("bmm(Tensor self, Tensor mat2) -> Tensor")
    .traits(kMatmulLike)
    .einsum("bij,bjk->bik")
    .meta(meta_bmm)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      batched_gemm(in[0], in[1], out[0], 1.0, 0.0);
    })
    .save_inputs({0, 1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {c.needs(0) ? ops::bmm(g[0], ops::transpose(c.input(1), 1, 2)) : Tensor(),
              c.needs(1) ? ops::bmm(ops::transpose(c.input(0), 1, 2), g[0]) : Tensor()};
    });

FLOW_OP(addmm)
    .schema("addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor")
    .traits(kMatmulLike)
    .einsum("+ik,ij,jk->ik")
    .meta([](const TensorList& in, const Attrs& a) {
      auto m = meta_mm({in[1], in[2]}, a);
      check_add_input(in[0], m[0], "addmm");
      return m;
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      add_gemm(in[0], mat3d(in[1]), mat3d(in[2]), mat3d(out[0]), out[0], a);
    })
    .save_inputs({1, 2})
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Tensor gx =
          c.needs(1) ? scaled(mm_like(g[0], ops::transpose(c.input(2), 0, 1), c.input(1)), c.attrs, "alpha") : Tensor();
      // Linear's backward (a bias row, a transposed weight): the weight gradient packs g^T, and the bias
      // gradient, g's column sums, comes from that same pass instead of a second one.
      const Shape& bias = c.input_meta(0).sizes;
      if (c.needs(0) && c.needs(2) && is_col_major(c.input(2)) && gemm_t_colsum_fused(g[0], c.input(1)) &&
          (bias == Shape{g[0].size(1)} || bias == Shape{1, g[0].size(1)})) {
        TensorList r = ops::call("_mm_t_colsum", {g[0], c.input(1)});
        return {scaled(ops::reshape(r[1], bias), c.attrs, "beta"), gx,
                scaled(ops::transpose(r[0], 0, 1), c.attrs, "alpha")};
      }
      return {c.needs(0) ? scaled(g[0], c.attrs, "beta") : Tensor(), gx,
              c.needs(2) ? scaled(mm_like(ops::transpose(c.input(1), 0, 1), g[0], c.input(2)), c.attrs, "alpha")
                         : Tensor()};
    });

// A linear layer's weight and bias gradients from one pass over the output gradient: (grad^T @ input,
// grad.sum(0)). addmm's backward calls it when both are wanted; its own backward keeps double backward working.
FLOW_OP(_mm_t_colsum)
    .schema("_mm_t_colsum(Tensor grad, Tensor input) -> (Tensor, Tensor)")
    .traits(kMatmulLike)
    .meta([](const TensorList& in, const Attrs&) -> std::vector<TensorMeta> {
      const Tensor &g = in[0], &x = in[1];
      FLOW_RUNTIME_CHECK(g.dim() == 2 && x.dim() == 2 && g.size(0) == x.size(0),
                         "_mm_t_colsum: expected grad "
                         "(T x O) and input (T x I) matrices, got ",
                         dims_str(g), " and ", dims_str(x));
      check_same_dtype(g, x, "_mm_t_colsum: expected grad and input");
      Device d = common_device(in, "_mm_t_colsum");
      return {{{g.size(1), x.size(1)}, g.dtype(), d}, {{g.size(1)}, g.dtype(), d}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      gemm_t_colsum(in[0], in[1], out[0], out[1]);
    })
    .save_inputs({0, 1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Tensor dg;
      if (c.needs(0)) {
        if (g[0].defined()) dg = ops::mm(c.input(1), ops::transpose(g[0], 0, 1));
        if (g[1].defined()) {
          Tensor rows = ops::expand(ops::reshape(g[1], {1, g[1].size(0)}), c.input(0).sizes());
          dg = dg.defined() ? ops::add(dg, rows) : rows;
        }
      }
      return {dg, c.needs(1) && g[0].defined() ? ops::mm(c.input(0), g[0]) : Tensor()};
    });

FLOW_OP(baddbmm)
    .schema("baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor")
    .traits(kMatmulLike)
    .einsum("+bik,bij,bjk->bik")
    .meta([](const TensorList& in, const Attrs& a) {
      auto m = meta_bmm({in[1], in[2]}, a);
      check_add_input(in[0], m[0], "baddbmm");
      return m;
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      add_gemm(in[0], in[1], in[2], out[0], out[0], a);
    })
    .save_inputs({1, 2})
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {c.needs(0) ? scaled(g[0], c.attrs, "beta") : Tensor(),
              c.needs(1) ? scaled(ops::bmm(g[0], ops::transpose(c.input(2), 1, 2)), c.attrs, "alpha") : Tensor(),
              c.needs(2) ? scaled(ops::bmm(ops::transpose(c.input(1), 1, 2), g[0]), c.attrs, "alpha") : Tensor()};
    });

FLOW_OP(mv)
    .schema("mv(Tensor self, Tensor vec) -> Tensor")
    .traits(kMatmulLike)
    .einsum("ij,j->i")
    .meta(meta_mv)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      batched_gemm(mat3d(in[0]), col3d(in[1]), col3d(out[0]), 1.0, 0.0);
    })
    .save_inputs({0, 1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {c.needs(0) ? ops::outer(g[0], c.input(1)) : Tensor(),
              c.needs(1) ? ops::mv(ops::transpose(c.input(0), 0, 1), g[0]) : Tensor()};
    });

FLOW_OP(addmv)
    .schema("addmv(Tensor self, Tensor mat, Tensor vec, *, Scalar beta=1, Scalar alpha=1) -> Tensor")
    .traits(kMatmulLike)
    .einsum("+i,ij,j->i")
    .meta([](const TensorList& in, const Attrs& a) {
      auto m = meta_mv({in[1], in[2]}, a);
      check_add_input(in[0], m[0], "addmv");
      return m;
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      add_gemm(in[0], mat3d(in[1]), col3d(in[2]), col3d(out[0]), out[0], a);
    })
    .save_inputs({1, 2})
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {c.needs(0) ? scaled(g[0], c.attrs, "beta") : Tensor(),
              c.needs(1) ? scaled(ops::outer(g[0], c.input(2)), c.attrs, "alpha") : Tensor(),
              c.needs(2) ? scaled(ops::mv(ops::transpose(c.input(1), 0, 1), g[0]), c.attrs, "alpha") : Tensor()};
    });

static void dot_kernel(const TensorList& in, const TensorList& out, const Attrs&) {
  batched_gemm(row3d(in[0]), col3d(in[1]), as3d(out[0], 1, 1, 1, 1), 1.0, 0.0);
}
static TensorList dot_backward(BackwardCtx& c, const TensorList& g) {
  return {c.needs(0) ? ops::mul(g[0], c.input(1)) : Tensor(), c.needs(1) ? ops::mul(g[0], c.input(0)) : Tensor()};
}

FLOW_OP(dot)
    .schema("dot(Tensor self, Tensor tensor) -> Tensor")
    .traits(kMatmulLike | kReduction)
    .einsum("i,i->")
    .meta([](const TensorList& in, const Attrs&) { return meta_dot(in, "dot"); })
    .cpu_out(dot_kernel)
    .save_inputs({0, 1})
    .backward(dot_backward);

// vdot conjugates its first argument; for the real dtypes we support it equals dot.
FLOW_OP(vdot)
    .schema("vdot(Tensor self, Tensor other) -> Tensor")
    .traits(kMatmulLike | kReduction)
    .einsum("i,i->")
    .meta([](const TensorList& in, const Attrs&) { return meta_dot(in, "vdot"); })
    .cpu_out(dot_kernel)
    .save_inputs({0, 1})
    .backward(dot_backward);

// Composite: gradients flow through mul.
FLOW_OP(outer)
    .schema("outer(Tensor self, Tensor vec2) -> Tensor")
    .traits(kMatmulLike | kComposite)
    .einsum("i,j->ij")
    .cpu([](const TensorList& in, const Attrs&) -> TensorList {
      FLOW_RUNTIME_CHECK(in[0].dim() == 1, "outer: Expected 1-D argument self, but got ", in[0].dim(), "-D");
      FLOW_RUNTIME_CHECK(in[1].dim() == 1, "outer: Expected 1-D argument vec2, but got ", in[1].dim(), "-D");
      return {ops::mul(ops::unsqueeze(in[0], 1), in[1])};
    });

namespace {

// Memory order of t's dims, outermost first (by decreasing stride; ties keep dim order, broadcast dims last).
std::vector<int64_t> memory_order(const Tensor& t) {
  std::vector<int64_t> order(t.dim());
  for (int64_t d = 0; d < t.dim(); ++d) order[d] = d;
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return t.stride(x) > t.stride(y); });
  return order;
}

// Dense strides for `sizes` laid out in `order` (outermost first), or contiguous strides when `order` is not a
// permutation or leaves neither matrix dim innermost (the GEMM writes rows or columns with unit stride).
Shape strides_in_order(const Shape& sizes, const std::vector<int64_t>& order) {
  int64_t r = static_cast<int64_t>(sizes.size());
  std::vector<bool> seen(r, false);
  bool ok = static_cast<int64_t>(order.size()) == r && r >= 2;
  for (int64_t d : order) {
    if (!ok || d < 0 || d >= r || seen[d]) {
      ok = false;
      break;
    }
    seen[d] = true;
  }
  if (!ok || (order.back() != r - 1 && order.back() != r - 2)) return contiguous_strides(sizes);
  Shape st(r);
  int64_t acc = 1;
  for (int64_t i = r - 1; i >= 0; --i) {
    st[order[i]] = acc;
    acc *= std::max<int64_t>(sizes[order[i]], 1);
  }
  return st;
}

std::vector<TensorMeta> meta_batch_matmul(const TensorList& in, const Attrs&) {
  const Tensor &a = in[0], &b = in[1];
  FLOW_RUNTIME_CHECK(a.dim() >= 3 && b.dim() == a.dim(), "_batch_matmul: expected operands of equal rank >= 3, got ",
                     a.dim(), "-D and ", b.dim(), "-D");
  Shape out(a.sizes().begin(), a.sizes().end() - 1);
  FLOW_RUNTIME_CHECK(Shape(b.sizes().begin(), b.sizes().end() - 2) == Shape(out.begin(), out.end() - 1) &&
                         a.size(-1) == b.size(-2),
                     "_batch_matmul: shapes cannot be multiplied (", dims_str(a), " and ", dims_str(b), ")");
  check_same_dtype(a, b, "expected self and other");
  out.push_back(b.size(-1));
  return {{out, a.dtype(), common_device(in, "_batch_matmul")}};
}

// The product laid out like `ref` (the operand whose gradient it is), so the gradient flows back through the
// views that made `ref` (transpose, view of a split) without copies.
Tensor batch_matmul_like(const Tensor& x, const Tensor& y, const Tensor& ref) {
  return ops::call1("_batch_matmul", {x, y}, {memory_order(ref)});
}

}  // namespace

// matmul's batched case: (batch..., n, k) @ (batch..., k, m) with equal batch sizes and any strides, so
// transposed or head-split operands multiply in place instead of being copied into a 3-D bmm.
// `memory_order` lays the result out in that dim order (outermost first); the default is contiguous.
FLOW_OP(_batch_matmul)
    .schema("_batch_matmul(Tensor self, Tensor other, int[]? memory_order=None) -> Tensor")
    .traits(kMatmulLike)
    .einsum("...ij,...jk->...ik")
    .meta(meta_batch_matmul)
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      Shape sizes = meta_batch_matmul(in, a)[0].sizes;  // compute kernels check their inputs themselves
      Tensor out = a.none("memory_order") ? empty(sizes, in[0].dtype(), in[0].device())
                                          : empty_strided(sizes, strides_in_order(sizes, a.ints("memory_order")),
                                                          in[0].dtype(), in[0].device());
      batched_gemm(in[0], in[1], out, 1.0, 0.0);
      return {out};
    })
    .save_inputs({0, 1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Tensor a = c.input(0), b = c.input(1);
      int64_t r = a.dim();
      return {c.needs(0) ? batch_matmul_like(g[0], ops::transpose(b, r - 2, r - 1), a) : Tensor(),
              c.needs(1) ? batch_matmul_like(ops::transpose(a, r - 2, r - 1), g[0], b) : Tensor()};
    });

namespace {

// PyTorch's matmul: dot / mv / mm for 1-D and 2-D operands; a >= 3-D left operand times a matrix or vector
// is folded into one mm; everything else broadcasts the batch dims and runs _batch_matmul on the (possibly
// strided, never copied) operands.
Tensor matmul_impl(const Tensor& a, const Tensor& b) {
  int64_t da = a.dim(), db = b.dim();
  FLOW_RUNTIME_CHECK(da > 0 && db > 0, "both arguments to matmul need to be at least 1D, but they are ", da, "D and ",
                     db, "D");
  if (da == 1 && db == 1) return ops::call1("dot", {a, b});
  if (da == 2 && db == 1) return ops::mv(a, b);
  if (da == 1 && db == 2) return ops::squeeze(ops::mm(ops::unsqueeze(a, 0), b), 0);
  if (da == 2 && db == 2) return ops::mm(a, b);
  if (da >= 3 && db <= 2) {
    Shape out = a.sizes();
    int64_t k = out.back();
    out.pop_back();
    Tensor a2 = ops::reshape(a, {-1, k});
    if (db == 1) return ops::reshape(ops::mv(a2, b), out);
    out.push_back(b.size(1));
    return ops::reshape(ops::mm(a2, b), out);
  }
  // batched: (..., n, k) @ (..., k, m)
  Tensor a1 = da == 1 ? ops::unsqueeze(a, 0) : a;
  Tensor b1 = db == 1 ? ops::unsqueeze(b, 1) : b;
  int64_t n = a1.size(-2), k = a1.size(-1), k2 = b1.size(-2), m = b1.size(-1);
  Shape ba(a1.sizes().begin(), a1.sizes().end() - 2), bb(b1.sizes().begin(), b1.sizes().end() - 2);
  Shape batch = broadcast_shapes(ba, bb, "matmul");
  FLOW_RUNTIME_CHECK(k == k2, "Expected size for first two dimensions of batch2 tensor to be: [", shape_numel(batch),
                     ", ", k, "] but got: [", shape_numel(batch), ", ", k2, "].");
  Shape ea = batch, eb = batch;
  ea.insert(ea.end(), {n, k});
  eb.insert(eb.end(), {k, m});
  Tensor r = ops::call1("_batch_matmul", {ops::expand(a1, ea), ops::expand(b1, eb)});
  Shape out = batch;
  if (da > 1) out.push_back(n);
  if (db > 1) out.push_back(m);
  return out == r.sizes() ? r : ops::reshape(r, out);
}

}  // namespace

FLOW_OP(matmul)
    .schema("matmul(Tensor self, Tensor other) -> Tensor")
    .traits(kMatmulLike | kComposite)
    .cpu([](const TensorList& in, const Attrs&) -> TensorList { return {matmul_impl(in[0], in[1])}; });

}  // namespace flow
