// einsum as a composite of diagonal / permute / sum / bmm: operands are aligned to one global label order
// (output labels first), then contracted left to right, each pair as a single bmm over
// (batch, left, contracted) x (batch, contracted, right). Gradients flow through those ops.
#include <algorithm>
#include <map>

#include "linalg.h"

namespace flow {
namespace {

constexpr int kEllBase = 52;  // labels 0..51 are letters; ellipsis dims get kEllBase + i

int letter_id(char ch) {
  if (ch >= 'a' && ch <= 'z') return ch - 'a';
  if (ch >= 'A' && ch <= 'Z') return 26 + (ch - 'A');
  fail(ErrorKind::Runtime,
       "einsum(): invalid subscript given at index: operand subscript must be in [a-zA-Z] but got '", ch, "'");
}

struct Term {
  std::vector<int> labels;  // letters; -1 marks the ellipsis position
  bool has_ell = false;
};

Term parse_term(const std::string& s, const char* what) {
  Term t;
  for (size_t i = 0; i < s.size(); ++i) {
    char ch = s[i];
    if (ch == ' ') continue;
    if (ch == '.') {
      FLOW_RUNTIME_CHECK(!t.has_ell && s.compare(i, 3, "...") == 0, "einsum(): found '.' for ", what,
                         " that is not part of any ellipsis");
      t.has_ell = true;
      t.labels.push_back(-1);
      i += 2;
      continue;
    }
    t.labels.push_back(letter_id(ch));
  }
  return t;
}

Tensor einsum_impl(const std::string& eq, const TensorList& ops_in) {
  std::string lhs = eq, rhs;
  size_t arrow = eq.find("->");
  bool explicit_out = arrow != std::string::npos;
  if (explicit_out) {
    lhs = eq.substr(0, arrow);
    rhs = eq.substr(arrow + 2);
  }
  std::vector<std::string> terms_s;
  {
    size_t p = 0;
    while (true) {
      size_t c = lhs.find(',', p);
      terms_s.push_back(lhs.substr(p, c == std::string::npos ? std::string::npos : c - p));
      if (c == std::string::npos) break;
      p = c + 1;
    }
  }
  size_t nops = ops_in.size();
  FLOW_RUNTIME_CHECK(nops > 0, "einsum(): must provide at least one operand");
  FLOW_RUNTIME_CHECK(terms_s.size() <= nops, "einsum(): fewer operands were provided than specified in the equation");
  FLOW_RUNTIME_CHECK(terms_s.size() >= nops, "einsum(): more operands were provided than specified in the equation");

  // Expand each operand's labels to one per dim; ellipsis dims are right-aligned across operands.
  std::vector<std::vector<int>> labels(nops);
  int64_t ell_nd = 0;
  std::vector<Term> terms;
  for (size_t i = 0; i < nops; ++i) {
    terms.push_back(parse_term(terms_s[i], "operand"));
    int64_t nl = static_cast<int64_t>(terms[i].labels.size()) - (terms[i].has_ell ? 1 : 0);
    int64_t nd = ops_in[i].dim();
    if (terms[i].has_ell) {
      FLOW_RUNTIME_CHECK(nd >= nl, "einsum(): the number of subscripts in the equation (", nl,
                         ") is more than the number of dimensions (", nd, ") for operand ", i);
      ell_nd = std::max(ell_nd, nd - nl);
    } else {
      FLOW_RUNTIME_CHECK(nd == nl, "einsum(): the number of subscripts in the equation (", nl,
                         ") does not match the number of dimensions (", nd, ") for operand ", i,
                         " and no ellipsis was given");
    }
  }
  for (size_t i = 0; i < nops; ++i) {
    int64_t nd = ops_in[i].dim();
    int64_t nl = static_cast<int64_t>(terms[i].labels.size()) - (terms[i].has_ell ? 1 : 0);
    for (int l : terms[i].labels) {
      if (l == -1) {
        int64_t k = nd - nl;
        for (int64_t e = 0; e < k; ++e) labels[i].push_back(kEllBase + static_cast<int>(ell_nd - k + e));
      } else {
        labels[i].push_back(l);
      }
    }
  }

  // sizes per label (broadcasting size-1), and counts
  std::map<int, int64_t> size;
  std::map<int, int> count;
  for (size_t i = 0; i < nops; ++i) {
    std::vector<bool> seen(kEllBase + 64, false);
    for (size_t d = 0; d < labels[i].size(); ++d) {
      int l = labels[i][d];
      int64_t s = ops_in[i].size(static_cast<int64_t>(d));
      if (!seen[l]) count[l]++;
      seen[l] = true;
      auto it = size.find(l);
      if (it == size.end()) {
        size[l] = s;
      } else if (it->second == 1) {
        it->second = s;
      } else if (s != 1 && s != it->second) {
        if (l >= kEllBase)
          fail(ErrorKind::Runtime, "einsum(): operands do not broadcast with remapped shapes (original->remapped)");
        char ch = l < 26 ? static_cast<char>('a' + l) : static_cast<char>('A' + l - 26);
        fail(ErrorKind::Runtime, "einsum(): subscript ", ch, " has size ", s, " for operand ", i,
             " which does not broadcast with previously seen size ", it->second);
      }
    }
  }

  // output labels
  std::vector<int> out;
  if (explicit_out) {
    Term o = parse_term(rhs, "output");
    for (int l : o.labels) {
      if (l == -1) {
        for (int64_t e = 0; e < ell_nd; ++e) out.push_back(kEllBase + static_cast<int>(e));
        continue;
      }
      FLOW_RUNTIME_CHECK(std::find(out.begin(), out.end(), l) == out.end(), "einsum(): output subscript ",
                         static_cast<char>(l < 26 ? 'a' + l : 'A' + l - 26), " appears more than once in the output");
      FLOW_RUNTIME_CHECK(size.count(l), "einsum(): output subscript ",
                         static_cast<char>(l < 26 ? 'a' + l : 'A' + l - 26),
                         " does not appear in the equation for any input operand");
      out.push_back(l);
    }
  } else {
    for (int64_t e = 0; e < ell_nd; ++e) out.push_back(kEllBase + static_cast<int>(e));
    // letters seen exactly once over all operands (counting repeats within an operand), alphabetical
    std::map<int, int> occ;
    for (auto& ls : labels)
      for (int l : ls)
        if (l < kEllBase) occ[l]++;
    std::vector<int> lets;
    for (auto& [l, c] : occ)
      if (c == 1) lets.push_back(l);
    // PyTorch orders implicit output alphabetically with upper case before lower case
    std::sort(lets.begin(), lets.end(), [](int a, int b) {
      auto key = [](int x) { return x >= 26 ? x - 26 : x + 26; };
      return key(a) < key(b);
    });
    out.insert(out.end(), lets.begin(), lets.end());
  }

  // global order: output labels, then the rest
  std::vector<int> order = out;
  for (auto& [l, s] : size)
    if (std::find(order.begin(), order.end(), l) == order.end()) order.push_back(l);
  std::map<int, int> pos;
  for (size_t i = 0; i < order.size(); ++i) pos[order[i]] = static_cast<int>(i);
  int64_t G = static_cast<int64_t>(order.size());

  // align every operand to the global order (diagonals for repeated labels, size-1 for absent ones)
  std::vector<Tensor> al(nops);
  for (size_t i = 0; i < nops; ++i) {
    Tensor t = ops_in[i];
    std::vector<int> ls = labels[i];
    for (bool again = true; again;) {
      again = false;
      for (size_t d1 = 0; d1 < ls.size() && !again; ++d1)
        for (size_t d2 = d1 + 1; d2 < ls.size() && !again; ++d2)
          if (ls[d1] == ls[d2]) {
            FLOW_RUNTIME_CHECK(t.size(d1) == t.size(d2), "einsum(): subscript ",
                               static_cast<char>(ls[d1] < 26 ? 'a' + ls[d1] : 'A' + ls[d1] - 26),
                               " is repeated for operand ", i, " but the sizes don't match, ", t.size(d1),
                               " != ", t.size(d2));
            t = ops::call1("diagonal", {t}, {int64_t(0), int64_t(d1), int64_t(d2)});
            int l = ls[d1];
            ls.erase(ls.begin() + d2);
            ls.erase(ls.begin() + d1);
            ls.push_back(l);
            again = true;
          }
    }
    // permute into global order, then view with size-1 dims for missing labels
    std::vector<int64_t> perm(ls.size());
    for (size_t d = 0; d < ls.size(); ++d) perm[d] = static_cast<int64_t>(d);
    std::sort(perm.begin(), perm.end(), [&](int64_t x, int64_t y) { return pos[ls[x]] < pos[ls[y]]; });
    t = ops::permute(t, perm);
    Shape full(G, 1);
    for (size_t d = 0; d < ls.size(); ++d) full[pos[ls[perm[d]]]] = t.size(static_cast<int64_t>(d));
    al[i] = ops::reshape(t, full);
  }

  auto needed_after = [&](size_t k, int64_t g) {  // label g used by the output or operands after k
    if (g < static_cast<int64_t>(out.size())) return true;
    for (size_t j = k + 1; j < nops; ++j)
      if (al[j].size(g) != 1) return true;
    return false;
  };
  auto sum_dims = [](const Tensor& t, const std::vector<int64_t>& dims) {
    return dims.empty() ? t : ops::sum(t, dims, true);
  };

  Tensor acc = al[0];
  {  // sum labels only operand 0 carries and nothing later needs
    std::vector<int64_t> d;
    for (int64_t g = 0; g < G; ++g)
      if (acc.size(g) != 1 && !needed_after(0, g)) d.push_back(g);
    acc = sum_dims(acc, d);
  }
  for (size_t k = 1; k < nops; ++k) {
    Tensor B = al[k];
    std::vector<int64_t> sb;
    for (int64_t g = 0; g < G; ++g)
      if (B.size(g) != 1 && acc.size(g) == 1 && !needed_after(k, g)) sb.push_back(g);
    B = sum_dims(B, sb);
    std::vector<int64_t> batch, left, right, con;
    for (int64_t g = 0; g < G; ++g) {
      int64_t sa = acc.size(g), sz = B.size(g);
      bool keep = needed_after(k, g);
      if (sa != 1 && sz != 1) (keep ? batch : con).push_back(g);
      else if (sz != 1) right.push_back(g);
      else left.push_back(g);  // present only in acc (or size 1 in both)
    }
    auto prod = [](const Tensor& t, const std::vector<int64_t>& ds) {
      int64_t p = 1;
      for (int64_t d : ds) p *= t.size(d);
      return p;
    };
    int64_t nb = prod(acc, batch), nl = prod(acc, left), nc = prod(acc, con), nr = prod(B, right);
    std::vector<int64_t> pa = batch, pb = batch;
    pa.insert(pa.end(), left.begin(), left.end());
    pa.insert(pa.end(), con.begin(), con.end());
    pb.insert(pb.end(), con.begin(), con.end());
    pb.insert(pb.end(), right.begin(), right.end());
    // B's left dims are size 1: append them so the permutation is complete
    pb.insert(pb.end(), left.begin(), left.end());
    std::vector<int64_t> pa_full = pa;
    pa_full.insert(pa_full.end(), right.begin(), right.end());
    Tensor a3 = ops::reshape(ops::permute(acc, pa_full), {nb, nl, nc});
    Tensor b3 = ops::reshape(ops::permute(B, pb), {nb, nc, nr});
    Tensor r = ops::bmm(a3, b3);  // (batch, left, right)
    Shape rs;
    std::vector<int64_t> rl;
    for (int64_t g : batch) rs.push_back(acc.size(g)), rl.push_back(g);
    for (int64_t g : left) rs.push_back(acc.size(g)), rl.push_back(g);
    for (int64_t g : right) rs.push_back(B.size(g)), rl.push_back(g);
    for (int64_t g : con) rs.push_back(1), rl.push_back(g);
    r = ops::reshape(r, rs);
    std::vector<int64_t> inv(G);
    for (int64_t i = 0; i < G; ++i) inv[rl[i]] = i;
    acc = ops::permute(r, inv);
  }
  // acc has every global label; non-output labels are size 1 (summed or contracted) except when the
  // output is empty of them already; sum any left, then drop them
  std::vector<int64_t> rest;
  for (int64_t g = static_cast<int64_t>(out.size()); g < G; ++g)
    if (acc.size(g) != 1) rest.push_back(g);
  acc = sum_dims(acc, rest);
  Shape os;
  for (size_t g = 0; g < out.size(); ++g) os.push_back(size[out[g]]);
  if (acc.sizes() != Shape(os.begin(), os.end())) {
    Shape cur(acc.sizes().begin(), acc.sizes().begin() + static_cast<int64_t>(out.size()));
    if (cur != os) acc = ops::expand(ops::reshape(acc, cur), os);  // broadcast size-1 output labels
    else acc = ops::reshape(acc, os);
  }
  return acc;
}

}  // namespace

FLOW_OP(einsum)
    .schema("einsum(str equation, Tensor[] tensors) -> Tensor")
    .traits(kMatmulLike | kComposite)
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList { return {einsum_impl(a.str("equation"), in)}; });

}  // namespace flow
