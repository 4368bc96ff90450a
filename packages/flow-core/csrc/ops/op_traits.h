// The data traits carry beyond their bit: what SBP inference and fusion need to reason about an op without a
// special case per op. Every field is optional; an op that leaves one unset simply offers no candidates of
// that family (and a later layer falls back to broadcasting, or to the op's decomposition).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "../core/tensor.h"

namespace flow {

struct TensorMeta;
struct Attrs;
struct OpDef;

// How a reduction (or a partial value) combines: the reduction's own combiner, and the kind of partial value
// that splitting its reduced dim leaves (mean's partial values are sums scaled by the split count).
enum class Combiner : int8_t { None, Sum, Mean, Max, Min, Prod, Any, All };
const char* combiner_name(Combiner c);

// One axis of an SBP signature: split along a dim, broadcast, or a partial value of some combiner.
struct SbpAxis {
  enum Kind : int8_t { Split, Broadcast, Partial };
  Kind kind = Broadcast;
  int64_t dim = -1;                  // Split: the dim
  Combiner partial = Combiner::Sum;  // Partial: how the pieces combine
  bool operator==(const SbpAxis& o) const {
    return kind == o.kind && (kind != Split || dim == o.dim) && (kind != Partial || partial == o.partial);
  }
  std::string str() const;  // "S(0)", "B", "P(sum)"
};
// One candidate: an SBP per tensor input (absent optional inputs get Broadcast) and per output.
struct SbpSignature {
  std::vector<SbpAxis> inputs, outputs;
  bool operator==(const SbpSignature& o) const { return inputs == o.inputs && outputs == o.outputs; }
  std::string str() const;  // "S(0), B -> S(0)"
};

// The dims an op acts along given its inputs (a reduction's dims, softmax's dim, cat's dim, flip's dims),
// wrapped to non-negative indices of input 0.
using DimsFn = std::function<std::vector<int64_t>(const TensorList& in, const Attrs& attrs)>;
// For a view/reshape: pairs (input dim, output dim) such that splitting the input evenly along the first is
// splitting the output along the second (a transpose maps every dim; a reshape maps the outermost factor of
// each merged or split group).
using DimMapFn = std::function<std::vector<std::pair<int64_t, int64_t>>(const TensorList& in, const Attrs& attrs)>;
// A per-op rule that replaces the trait-derived candidates.
using SbpRuleFn = std::function<std::vector<SbpSignature>(const TensorList& in, const Attrs& attrs)>;

// The candidate 1-D SBP signatures of `op` on inputs with this metadata (tensors of any device, meta ones
// included; undefined optional inputs take Broadcast): the op's own rule when it has one, else one rule per
// trait family (elementwise/broadcasting, reductions with their combiner, scans, matmul-like einsum specs,
// views' dimension maps, ops acting along dims), always with all-Broadcast. A split is valid when the split
// count divides the dim; n-D signatures are products of these, one per mesh dimension.
std::vector<SbpSignature> sbp_candidates(const OpDef& op, const TensorList& in, const Attrs& attrs);

}  // namespace flow
