// Candidate SBP signatures from op traits (op_traits.h): one rule per trait family, no per-op special
// cases. flow-dist ranks them by boxing cost; an op with a rule of its own (OpDef::sbp_rule) replaces these.
#include <algorithm>
#include <map>

#include "registry.h"

namespace flow {
namespace {

SbpAxis S(int64_t d) { return {SbpAxis::Split, d, Combiner::Sum}; }
SbpAxis B() { return {SbpAxis::Broadcast, -1, Combiner::Sum}; }
SbpAxis P(Combiner c = Combiner::Sum) { return {SbpAxis::Partial, -1, c}; }

struct Candidates {
  std::vector<SbpSignature> list;
  void add(SbpSignature s) {
    if (std::find(list.begin(), list.end(), s) == list.end()) list.push_back(std::move(s));
  }
  void add_uniform(size_t ni, size_t no, SbpAxis in, SbpAxis out) {
    add({std::vector<SbpAxis>(ni, in), std::vector<SbpAxis>(no, out)});
  }
};

bool contains(const std::vector<int64_t>& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// Elementwise with broadcasting: split any output dim that is not acted along; an input that broadcasts
// along it (or lacks it) is broadcast.
void elementwise(const TensorList& in, const Shape& out, size_t no, const std::vector<int64_t>& touched,
                 Candidates& c) {
  const int64_t nd = static_cast<int64_t>(out.size());
  for (int64_t d = 0; d < nd; ++d) {
    if (contains(touched, d) || out[d] <= 1) continue;
    SbpSignature s;
    bool any = false;
    for (const Tensor& t : in) {
      int64_t k = t.defined() ? d - (nd - t.dim()) : -1;
      if (k >= 0 && t.size(k) == out[d]) {
        s.inputs.push_back(S(k));
        any = true;
      } else {
        s.inputs.push_back(B());
      }
    }
    if (!any) continue;
    s.outputs.assign(no, S(d));
    c.add(std::move(s));
  }
}

// Reductions and scans over op.dims: other dims split through; a reduced dim split leaves partial values of
// the op's combiner (single-output reductions only: indices do not combine).
void reduction(const OpDef& op, const TensorList& in, const Attrs& attrs, size_t no, Candidates& c) {
  const Tensor& x = in[0];
  const std::vector<int64_t> dims = op.dims(in, attrs);
  const bool keepdim = attrs.has("keepdim") && attrs.b("keepdim");
  const bool scan = op.has(kScan);
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (x.size(d) <= 1) continue;
    std::vector<SbpAxis> ins(in.size(), B());
    ins[0] = S(d);
    if (!contains(dims, d)) {
      int64_t od = d;
      if (!scan && !keepdim) od -= std::count_if(dims.begin(), dims.end(), [d](int64_t r) { return r < d; });
      c.add({ins, std::vector<SbpAxis>(no, S(od))});
    } else if (!scan && no == 1 && op.combiner != Combiner::None) {
      c.add({ins, {P(op.combiner)}});
    }
  }
}

// "..." in a term stands for the leading batch dims (as many as the output has beyond the term's letters):
// they become upper-case letters, shared by every term, so each batch dim splits through like a kept index.
std::string expand_batch(const std::string& term, int64_t batch) {
  const auto dots = term.find("...");
  if (dots == std::string::npos) return term;
  std::string letters;
  for (int64_t k = 0; k < batch; ++k) letters.push_back(static_cast<char>('A' + k));
  return term.substr(0, dots) + letters + term.substr(dots + 3);
}

// Matmul-like ops by their einsum spec ("+" marks an added input, a bias): a kept index splits both sides; a
// contracted one leaves partial sums, and an added input must then be partial too. A lone partial factor
// gives a partial product.
void matmul(const OpDef& op, const TensorList& in, const Shape& out, size_t no, Candidates& c) {
  const std::string& spec = op.einsum;
  const auto arrow = spec.find("->");
  if (arrow == std::string::npos) return;
  std::vector<std::string> terms;
  std::vector<bool> additive;
  std::string lhs = spec.substr(0, arrow), rhs = spec.substr(arrow + 2);
  const int64_t batch = rhs.find("...") == std::string::npos ? 0 : static_cast<int64_t>(out.size() + 3 - rhs.size());
  if (batch < 0 || batch > 26) return;
  rhs = expand_batch(rhs, batch);
  for (size_t b = 0, e; b <= lhs.size(); b = e + 1) {
    e = lhs.find(',', b);
    if (e == std::string::npos) e = lhs.size();
    std::string t = lhs.substr(b, e - b);
    additive.push_back(!t.empty() && t[0] == '+');
    terms.push_back(expand_batch(additive.back() ? t.substr(1) : t, batch));
  }
  if (terms.size() != in.size() || rhs.size() != out.size()) return;
  // an input of lower rank than its term aligns to the term's right (a bias of shape (k,) for "ik")
  auto pos = [&](size_t i, char l) -> int64_t {
    const std::string& t = terms[i];
    auto p = t.find(l);
    if (p == std::string::npos || !in[i].defined()) return -1;
    int64_t k = static_cast<int64_t>(p) - (static_cast<int64_t>(t.size()) - in[i].dim());
    return k;
  };
  std::map<char, int64_t> extent;
  for (size_t j = 0; j < rhs.size(); ++j) extent[rhs[j]] = out[j];
  for (size_t i = 0; i < in.size(); ++i)
    for (char l : terms[i]) {
      int64_t k = pos(i, l);
      if (k >= 0 && !additive[i]) extent[l] = std::max(extent[l], in[i].size(k));
    }
  for (auto [l, n] : extent) {
    if (n <= 1) continue;
    SbpSignature s;
    const auto o = rhs.find(l);
    for (size_t i = 0; i < in.size(); ++i) {
      int64_t k = pos(i, l);
      if (k >= 0 && in[i].size(k) == n) s.inputs.push_back(S(k));
      else if (o == std::string::npos && additive[i]) s.inputs.push_back(P());
      else s.inputs.push_back(B());
    }
    s.outputs.assign(no, o == std::string::npos ? P() : S(static_cast<int64_t>(o)));
    c.add(std::move(s));
  }
  for (size_t i = 0; i < in.size(); ++i) {
    if (additive[i]) continue;
    SbpSignature s;
    for (size_t j = 0; j < in.size(); ++j) s.inputs.push_back(j == i || additive[j] ? P() : B());
    s.outputs.assign(no, P());
    c.add(std::move(s));
  }
}

}  // namespace

std::vector<SbpSignature> sbp_candidates(const OpDef& op_in, const TensorList& in, const Attrs& attrs) {
  const OpDef& op = op_in.functional ? *op_in.functional : op_in;
  if (op.sbp_rule) return op.sbp_rule(in, attrs);
  Candidates c;
  std::vector<TensorMeta> outs = op.meta ? op.meta(in, attrs) : std::vector<TensorMeta>{};
  const size_t no = op.schema.num_outputs < 0 ? 1 : static_cast<size_t>(op.schema.num_outputs);
  const bool has_input = !in.empty() && in[0].defined();
  if (has_input && op.dim_map) {
    for (auto [a, b] : op.dim_map(in, attrs)) {
      if (in[0].size(a) <= 1) continue;
      std::vector<SbpAxis> ins(in.size(), B());
      ins[0] = S(a);
      c.add({ins, std::vector<SbpAxis>(no, S(b))});
    }
    c.add_uniform(in.size(), no, P(), P());  // a view is linear
  } else if (has_input && !op.einsum.empty() && !outs.empty()) {
    matmul(op, in, outs[0].sizes, no, c);
  } else if (has_input && op.dims && op.has(kReduction | kScan)) {
    reduction(op, in, attrs, no, c);
  } else if (has_input && !outs.empty() && (op.has(kElementwise) || op.dims)) {
    std::vector<int64_t> touched = op.dims ? op.dims(in, attrs) : std::vector<int64_t>{};
    elementwise(in, outs[0].sizes, no, touched, c);
  }
  c.add_uniform(in.size(), no, B(), B());
  return c.list;
}

}  // namespace flow
