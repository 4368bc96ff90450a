// The dimension maps of view and reshape ops (OpDef::dim_map): pairs (input dim, output dim) such that an even
// split of the input along the first is an even split of the output along the second. SBP inference carries
// S(i) through a view with them; a dim that is merged away, sliced or broadcast has no pair.
#pragma once
#include <algorithm>

#include "registry.h"

namespace flow::dimmap {

using Pairs = std::vector<std::pair<int64_t, int64_t>>;

inline int64_t rank(const TensorList& in) { return in.empty() || !in[0].defined() ? 0 : in[0].dim(); }

// Every input dim but `gone` keeps its order in the output (select, unbind, diagonal's kept dims).
inline Pairs without(int64_t nd, const std::vector<int64_t>& gone) {
  Pairs p;
  int64_t o = 0;
  for (int64_t i = 0; i < nd; ++i) {
    if (std::find(gone.begin(), gone.end(), i) != gone.end()) continue;
    p.push_back({i, o++});
  }
  return p;
}

inline Pairs transpose_map(const TensorList& in, const Attrs& a) {
  const int64_t nd = rank(in);
  if (nd == 0) return {};
  const int64_t d0 = wrap_dim(a.i("dim0"), nd, "transpose"), d1 = wrap_dim(a.i("dim1"), nd, "transpose");
  Pairs p;
  for (int64_t o = 0; o < nd; ++o) p.push_back({o == d0 ? d1 : o == d1 ? d0 : o, o});
  return p;
}

inline Pairs permute_map(const TensorList& in, const Attrs& a) {
  const int64_t nd = rank(in);
  Pairs p;
  const auto& dims = a.ints("dims");
  for (size_t o = 0; o < dims.size() && nd > 0; ++o)
    p.push_back({wrap_dim(dims[o], nd, "permute"), static_cast<int64_t>(o)});
  return p;
}

inline Pairs unsqueeze_map(const TensorList& in, const Attrs& a) {
  const int64_t nd = rank(in), d = wrap_dim(a.i("dim"), nd + 1, "unsqueeze");
  Pairs p;
  for (int64_t i = 0; i < nd; ++i) p.push_back({i, i < d ? i : i + 1});
  return p;
}

// squeeze(dim) / squeeze(dims) / squeeze(): the size-1 dims among those named leave.
inline Pairs squeeze_map(const TensorList& in, const Attrs& a) {
  const int64_t nd = rank(in);
  std::vector<int64_t> named;
  const AttrValue& v = a.at("dim");
  if (auto i = std::get_if<int64_t>(&v)) named.push_back(*i);
  else if (auto l = std::get_if<std::vector<int64_t>>(&v)) named = *l;
  else
    for (int64_t i = 0; i < nd; ++i) named.push_back(i);
  std::vector<int64_t> gone;
  for (int64_t d : named) {
    if (nd == 0) break;
    int64_t w = wrap_dim(d, nd, "squeeze");
    if (in[0].size(w) == 1) gone.push_back(w);
  }
  return without(nd, gone);
}

inline Pairs expand_map(const TensorList& in, const Attrs& a) {
  const int64_t nd = rank(in);
  const auto& size = a.ints("size");
  const int64_t lead = static_cast<int64_t>(size.size()) - nd;
  Pairs p;
  for (int64_t i = 0; i < nd && lead >= 0; ++i)
    if (size[lead + i] == -1 || size[lead + i] == in[0].size(i)) p.push_back({i, lead + i});
  return p;
}

// view/reshape: the input and output dims are cut into groups of equal element count; within a group the
// outermost non-1 dims of each side correspond.
inline Pairs reshape_pairs(const TensorList& in, const std::vector<int64_t>& shape) {
  const Shape& is = in[0].sizes();
  Shape os(shape.begin(), shape.end());
  int64_t known = 1, infer = -1;
  for (size_t j = 0; j < os.size(); ++j) {
    if (os[j] == -1) infer = static_cast<int64_t>(j);
    else known *= os[j];
  }
  if (infer >= 0) os[infer] = known == 0 ? 0 : in[0].numel() / known;
  Pairs p;
  size_t i = 0, j = 0;
  while (i < is.size() && j < os.size()) {
    while (i < is.size() && is[i] == 1) ++i;
    while (j < os.size() && os[j] == 1) ++j;
    if (i == is.size() || j == os.size()) break;
    p.push_back({static_cast<int64_t>(i), static_cast<int64_t>(j)});
    int64_t pi = is[i++], pj = os[j++];
    while (pi != pj) {
      if (pi < pj && i < is.size()) pi *= is[i++];
      else if (pj < pi && j < os.size()) pj *= os[j++];
      else return p;
    }
  }
  return p;
}
inline Pairs view_map(const TensorList& in, const Attrs& a) { return reshape_pairs(in, a.ints("size")); }
inline Pairs reshape_map(const TensorList& in, const Attrs& a) { return reshape_pairs(in, a.ints("shape")); }

inline Pairs select_map(const TensorList& in, const Attrs& a) {  // select(dim, index), unbind(dim)
  const int64_t nd = rank(in);
  return nd == 0 ? Pairs{} : without(nd, {wrap_dim(a.i("dim"), nd, "select")});
}

inline Pairs keep_all_but(int64_t nd, int64_t d) {
  Pairs p;
  for (int64_t i = 0; i < nd; ++i)
    if (i != d) p.push_back({i, i});
  return p;
}

inline Pairs slice_map(const TensorList& in, const Attrs& a) {  // slice(dim, ...): the sliced dim is cut
  const int64_t nd = rank(in);
  return nd == 0 ? Pairs{} : keep_all_but(nd, wrap_dim(a.i("dim"), nd, "slice"));
}

inline Pairs split_map(const TensorList& in, const Attrs& a) {  // split_with_sizes(split_sizes, dim)
  const int64_t nd = rank(in);
  return nd == 0 ? Pairs{} : keep_all_but(nd, wrap_dim(a.i("dim"), nd, "split_with_sizes"));
}

inline Pairs diagonal_map(const TensorList& in, const Attrs& a) {  // diagonal(offset, dim1, dim2)
  const int64_t nd = rank(in);
  if (nd < 2) return {};
  return without(nd, {wrap_dim(a.i("dim1"), nd, "diagonal"), wrap_dim(a.i("dim2"), nd, "diagonal")});
}

}  // namespace flow::dimmap
