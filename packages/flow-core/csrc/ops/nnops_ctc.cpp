// CTC loss (Graves et al., 2006): the negative log-likelihood of a label sequence, summed over every
// alignment of it with the input frames (blanks around and between labels, repeated frames merged). The
// forward (alpha) recursion runs in log space over the extended sequence blank, l1, blank, l2, ..., blank;
// the backward pass runs the beta recursion and combines both, as PyTorch's CPU kernel does (including its
// gradient convention with respect to log_probs). Samples run in parallel. Reductions, zero_infinity's
// forward part and unbatched inputs are handled by nn.functional.ctc_loss.
#include <algorithm>
#include <cmath>
#include <limits>

#include "../kernels/cpu/parallel.h"
#include "nnops_util.h"

namespace flow {
namespace {

struct CtcGeom {
  int64_t T = 0, N = 0, C = 0, max_l = 0;
  std::vector<int64_t> il, tl, toff;  // lengths, and where each sample's labels start in the int64 targets
  int64_t tstride = 1;                // between consecutive labels of one sample
  Tensor targets;                     // contiguous int64, every label in [0, C)
};

CtcGeom ctc_geometry(const Tensor& lp, const Tensor& targets, const Attrs& a) {
  CtcGeom g;
  FLOW_RUNTIME_CHECK(lp.dim() == 3, "ctc_loss: log_probs must be 3-D (input_length, batch_size, num_labels), got ",
                     lp.dim(), "-D");
  FLOW_RUNTIME_CHECK(is_floating(lp.dtype()), "ctc_loss: log_probs must be floating point, got ",
                     torch_type_name(lp.dtype()));
  FLOW_RUNTIME_CHECK(is_integral(targets.dtype()), "ctc_loss: targets must be integral, got ",
                     torch_type_name(targets.dtype()));
  g.T = lp.size(0), g.N = lp.size(1), g.C = lp.size(2);
  g.il = a.ints("input_lengths"), g.tl = a.ints("target_lengths");
  const int64_t blank = a.i("blank");
  FLOW_RUNTIME_CHECK(blank < g.C && blank >= 0, "blank must be in label range");
  FLOW_RUNTIME_CHECK(static_cast<int64_t>(g.il.size()) == g.N, "input_lengths must be of size batch_size");
  FLOW_RUNTIME_CHECK(static_cast<int64_t>(g.tl.size()) == g.N, "target_lengths must be of size batch_size");
  for (int64_t b = 0; b < g.N; ++b) {
    FLOW_RUNTIME_CHECK(g.il[b] >= 0 && g.tl[b] >= 0, "ctc_loss: input and target lengths must be non-negative");
    FLOW_RUNTIME_CHECK(g.il[b] <= g.T, "Expected input_lengths to have value at most ", g.T, ", but got value ",
                       g.il[b], " (while checking arguments for ctc_loss_cpu)");
    g.max_l = std::max(g.max_l, g.tl[b]);
  }
  g.targets = nn::contig_as(targets, DType::Int64);
  g.toff.resize(g.N);
  if (targets.dim() == 1) {  // concatenated
    int64_t pos = 0;
    for (int64_t b = 0; b < g.N; ++b) g.toff[b] = pos, pos += g.tl[b];
    FLOW_RUNTIME_CHECK(targets.numel() >= pos, "ctc_loss: the concatenated targets hold ", targets.numel(),
                       " labels, but target_lengths sum to ", pos);
  } else {
    FLOW_RUNTIME_CHECK(targets.dim() == 2,
                       "ctc_loss: targets must be 1-D (concatenated) or 2-D (batch_size, "
                       "max_target_length), got ",
                       targets.dim(), "-D");
    FLOW_RUNTIME_CHECK(targets.size(0) == g.N, "Expected tensor to have size ", g.N, " at dimension 0, but got size ",
                       targets.size(0), " for argument #2 'targets' (while checking arguments for ctc_loss_cpu)");
    FLOW_RUNTIME_CHECK(targets.size(1) >= g.max_l, "Expected tensor to have size at least ", g.max_l,
                       " at dimension 1, but got size ", targets.size(1),
                       " for argument #2 'targets' (while checking arguments for ctc_loss_cpu)");
    for (int64_t b = 0; b < g.N; ++b) g.toff[b] = b * targets.size(1);
  }
  const int64_t* t = g.targets.data<int64_t>();
  for (int64_t b = 0; b < g.N; ++b)
    for (int64_t k = 0; k < g.tl[b]; ++k) {
      int64_t v = t[g.toff[b] + k];
      FLOW_INDEX_CHECK(v >= 0 && v < g.C, "ctc_loss: target ", v, " is out of bounds for ", g.C, " labels");
    }
  return g;
}

template <typename A>
inline A lse2(A x, A y) {
  A m = std::max(x, y);
  if (m == -std::numeric_limits<A>::infinity()) return m;
  return m + std::log(std::exp(x - m) + std::exp(y - m));
}
template <typename A>
inline A lse3(A x, A y, A z) {
  A m = std::max(x, std::max(y, z));
  if (m == -std::numeric_limits<A>::infinity()) return m;
  return m + std::log(std::exp(x - m) + std::exp(y - m) + std::exp(z - m));
}

// The extended label at position s of sample b: even positions are blanks.
struct Labels {
  const int64_t* t;
  int64_t blank;
  int64_t at(int64_t s) const { return s % 2 == 0 ? blank : t[(s - 1) / 2]; }
  // whether s may be reached from s - 2 (skipping a blank between two different labels)
  bool skip(int64_t s) const { return s > 1 && s % 2 == 1 && at(s) != at(s - 2); }
};

template <typename T>
void ctc_forward(const CtcGeom& g, const Tensor& lp_in, int64_t blank, const Tensor& nll, const Tensor& alpha) {
  Tensor lp = nn::contig_as(lp_in, lp_in.dtype());
  const T* x = lp.data<T>();
  T* la = alpha.data<T>();
  T* out = nll.data<T>();
  const int64_t S2 = 2 * g.max_l + 1, N = g.N, C = g.C;
  const T ninf = -std::numeric_limits<T>::infinity();
  std::fill(la, la + alpha.numel(), ninf);
  parallel_for(N, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t L = g.tl[b], Tb = g.il[b], S = 2 * L + 1;
      Labels lab{g.targets.data<int64_t>() + g.toff[b], blank};
      auto lpv = [&](int64_t t, int64_t c) { return x[(t * N + b) * C + c]; };
      T* A = la + b * g.T * S2;
      if (Tb == 0) {  // no frames: only the empty sequence has an alignment
        out[b] = L == 0 ? T(0) : std::numeric_limits<T>::infinity();
        continue;
      }
      A[0] = lpv(0, blank);
      if (L > 0) A[1] = lpv(0, lab.at(1));
      for (int64_t t = 1; t < Tb; ++t) {
        const T* prev = A + (t - 1) * S2;
        T* cur = A + t * S2;
        for (int64_t s = 0; s < S; ++s) {
          T v = prev[s];
          T v1 = s > 0 ? prev[s - 1] : ninf, v2 = lab.skip(s) ? prev[s - 2] : ninf;
          cur[s] = lse3(v, v1, v2) + lpv(t, lab.at(s));
        }
      }
      const T* last = A + (Tb - 1) * S2;
      out[b] = -(L > 0 ? lse2(last[S - 1], last[S - 2]) : last[0]);
    }
  });
}

template <typename T>
void ctc_backward(const CtcGeom& g, const Tensor& grad_out, const Tensor& lp_in, const Tensor& nll_in,
                  const Tensor& alpha_in, int64_t blank, bool zero_infinity, const Tensor& grad) {
  Tensor lp = nn::contig_as(lp_in, lp_in.dtype()), gr = nn::contig_as(grad_out, lp_in.dtype());
  Tensor nll = nn::contig_as(nll_in, lp_in.dtype()), alpha = nn::contig_as(alpha_in, lp_in.dtype());
  const T *x = lp.data<T>(), *la = alpha.data<T>(), *nl = nll.data<T>(), *go = gr.data<T>();
  T* gx = grad.data<T>();
  const int64_t S2 = 2 * g.max_l + 1, N = g.N, C = g.C;
  const T ninf = -std::numeric_limits<T>::infinity();
  std::fill(gx, gx + grad.numel(), T(0));
  parallel_for(N, 1, [&](int64_t b0, int64_t b1) {
    std::vector<T> beta(static_cast<size_t>(g.T * S2)), lcab(static_cast<size_t>(C));
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t L = g.tl[b], Tb = g.il[b], S = 2 * L + 1;
      const T loss = nl[b];
      if (Tb == 0 || (zero_infinity && loss == std::numeric_limits<T>::infinity())) continue;
      Labels lab{g.targets.data<int64_t>() + g.toff[b], blank};
      auto lpv = [&](int64_t t, int64_t c) { return x[(t * N + b) * C + c]; };
      const T* A = la + b * g.T * S2;
      std::fill(beta.begin(), beta.end(), ninf);
      T* B = beta.data();
      B[(Tb - 1) * S2 + S - 1] = lpv(Tb - 1, lab.at(S - 1));
      if (L > 0) B[(Tb - 1) * S2 + S - 2] = lpv(Tb - 1, lab.at(S - 2));
      for (int64_t t = Tb - 2; t >= 0; --t) {
        const T* next = B + (t + 1) * S2;
        T* cur = B + t * S2;
        for (int64_t s = 0; s < S; ++s) {
          T v1 = s + 1 < S ? next[s + 1] : ninf, v2 = s + 2 < S && lab.skip(s + 2) ? next[s + 2] : ninf;
          cur[s] = lse3(next[s], v1, v2) + lpv(t, lab.at(s));
        }
      }
      // d loss / d log_probs[t, c] = exp(log_probs) - exp(log(sum over s labelled c of alpha * beta) + loss
      // - log_probs): PyTorch's convention (the first term cancels through a preceding log_softmax)
      for (int64_t t = 0; t < Tb; ++t) {
        std::fill(lcab.begin(), lcab.end(), ninf);
        for (int64_t s = 0; s < S; ++s) {
          int64_t c = lab.at(s);
          lcab[c] = lse2(lcab[c], A[t * S2 + s] + B[t * S2 + s]);
        }
        T* row = gx + (t * N + b) * C;
        for (int64_t c = 0; c < C; ++c) {
          T v = lpv(t, c);
          row[c] = (std::exp(v) - std::exp(lcab[c] + loss - v)) * go[b];
        }
      }
    }
  });
}

}  // namespace

// (negative log-likelihood per sample, log_alpha (N, T, 2 * max_target_length + 1) for the backward)
FLOW_OP(_ctc_loss)
    .schema(
        "_ctc_loss(Tensor log_probs, Tensor targets, int[] input_lengths, int[] target_lengths, int blank=0, "
        "bool zero_infinity=False) -> (Tensor, Tensor)")
    .traits(kLoss)
    .meta([](const TensorList& in, const Attrs& a) {
      CtcGeom g = ctc_geometry(in[0], in[1], a);
      Device dev = common_device(in, "ctc_loss");
      return std::vector<TensorMeta>{{{g.N}, in[0].dtype(), dev}, {{g.N, g.T, 2 * g.max_l + 1}, in[0].dtype(), dev}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      CtcGeom g = ctc_geometry(in[0], in[1], a);
      dispatch_floating(in[0].dtype(), "ctc_loss", [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (std::is_floating_point_v<T>) ctc_forward<T>(g, in[0], a.i("blank"), out[0], out[1]);
        else
          fail(ErrorKind::NotImplemented, "\"ctc_loss_cpu\" not implemented for '", torch_type_name(in[0].dtype()),
               "'");
      });
    })
    .save_inputs({0, 1})
    .save_outputs({0, 1})
    .nondiff_outputs({1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      const Attrs& a = c.attrs;
      return {ops::call1("_ctc_loss_backward", {g[0], c.input(0), c.input(1), c.output(0), c.output(1)},
                         {a.ints("input_lengths"), a.ints("target_lengths"), a.i("blank"), a.b("zero_infinity")}),
              Tensor()};
    });

FLOW_OP(_ctc_loss_backward)
    .schema(
        "_ctc_loss_backward(Tensor grad, Tensor log_probs, Tensor targets, Tensor neg_log_likelihood, "
        "Tensor log_alpha, int[] input_lengths, int[] target_lengths, int blank, bool zero_infinity) -> Tensor")
    .traits(kLoss | kBackwardHelper)
    .meta([](const TensorList& in, const Attrs&) {
      return std::vector<TensorMeta>{{in[1].sizes(), in[1].dtype(), in[1].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      CtcGeom g = ctc_geometry(in[1], in[2], a);
      FLOW_RUNTIME_CHECK(in[0].numel() == g.N && in[3].numel() == g.N &&
                             in[4].sizes() == Shape({g.N, g.T, 2 * g.max_l + 1}),
                         "_ctc_loss_backward: gradient, loss or log_alpha do not fit log_probs and the lengths");
      Tensor o = out[0].is_contiguous() ? out[0] : empty(out[0].sizes(), out[0].dtype(), out[0].device());
      dispatch_floating(in[1].dtype(), "ctc_loss_backward", [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (std::is_floating_point_v<T>)
          ctc_backward<T>(g, in[0], in[1], in[3], in[4], a.i("blank"), a.b("zero_infinity"), o);
        else
          fail(ErrorKind::NotImplemented, "\"ctc_loss_backward_cpu\" not implemented for '",
               torch_type_name(in[1].dtype()), "'");
      });
      if (!o.is_same(out[0])) ops::copy_into(out[0], o);
    })
    .backward([](BackwardCtx&, const TensorList&) -> TensorList {
      fail(ErrorKind::NotImplemented, "the derivative of ctc_loss's backward is not implemented");
    });

}  // namespace flow
