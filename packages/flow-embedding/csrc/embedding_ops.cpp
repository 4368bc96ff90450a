// OneEmbedding's registry ops: the lookup and the sparse optimizer update as ops of flow-core's registry, so eager
// code and nn.Graph run the same definition (a traced graph holds them as ordinary nodes and its plan calls their
// kernels). The store is named by a handle (store_handles.h).
#include <oneflow/ops/functions.h>
#include <oneflow/ops/registry.h>

#include <mutex>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "store_handles.h"

namespace flow_embedding {

namespace {
std::mutex g_mu;
std::unordered_map<int64_t, Store*>& table() {
  static std::unordered_map<int64_t, Store*> t;
  return t;
}
int64_t g_next = 1;
}  // namespace

int64_t register_store(Store* s) {
  std::lock_guard<std::mutex> lock(g_mu);
  const int64_t h = g_next++;
  table()[h] = s;
  return h;
}

void unregister_store(int64_t handle) {
  std::lock_guard<std::mutex> lock(g_mu);
  table().erase(handle);
}

Store* find_store(int64_t handle) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = table().find(handle);
  return it == table().end() ? nullptr : it->second;
}

namespace {
using namespace flow;

Store& store_of(const Attrs& a, const char* op) {
  Store* s = find_store(a.i("store"));
  FLOW_RUNTIME_CHECK(s != nullptr, op, ": store handle ", a.i("store"),
                     " names no live embedding store (was the embedding deleted?)");
  return *s;
}

void check_ids(const Tensor& t, const char* op, const char* what) {
  FLOW_TYPE_CHECK(t.dtype() == DType::Int32 || t.dtype() == DType::Int64, op, ": ", what,
                  " must be an int32 or int64 tensor, got ", dtype_name(t.dtype()));
}

// Flat int64 ids and int32 table numbers (range-checked against the store's tables).
std::pair<Tensor, Tensor> keys_of(const Tensor& ids, const Tensor& tables, const Store& s, const char* op) {
  FLOW_VALUE_CHECK(ids.numel() == tables.numel(), op, ": ids has ", ids.numel(), " elements, table_ids ",
                   tables.numel(), "; they must be equal");
  Tensor k = ops::contiguous(ops::to_dtype(ids, DType::Int64));
  Tensor t = ops::contiguous(ops::to_dtype(tables, DType::Int32));
  const int32_t* pt = t.data<int32_t>();
  for (int64_t i = 0, n = t.numel(); i < n; ++i)
    FLOW_INDEX_CHECK(pt[i] >= 0 && pt[i] < s.num_tables(), op, ": table_ids holds ", pt[i], ", out of range for ",
                     s.num_tables(), " table(s)");
  return {k, t};
}

// The store reports bad input with standard exceptions; they leave the kernel as the registry's errors of the
// same Python type the bindings give them (ValueError, IndexError, RuntimeError).
template <typename F>
void store_call(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    fail(ErrorKind::Value, e.what());
  } catch (const std::out_of_range& e) {
    fail(ErrorKind::Index, e.what());
  } catch (const std::length_error& e) {
    fail(ErrorKind::Runtime, e.what());
  }
}
}  // namespace

// Rows of (table_ids, ids) as a (numel, dim) float32 tensor; unseen ids are created from their table's initializer.
FLOW_OP(one_embedding_lookup)
    .schema(
        "one_embedding_lookup(Tensor ids, Tensor table_ids, *, int store, int dim, bool has_padding=False, "
        "int padding_idx=0) -> Tensor")
    .traits(kNonDifferentiable | kIndexing)
    .meta([](const TensorList& in, const Attrs& a) -> std::vector<TensorMeta> {
      check_ids(in[0], "one_embedding_lookup", "ids");
      check_ids(in[1], "one_embedding_lookup", "table_ids");
      return {{{in[0].numel(), a.i("dim")}, DType::Float32, in[0].device()}};
    })
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      Store& s = store_of(a, "one_embedding_lookup");
      FLOW_VALUE_CHECK(a.i("dim") == s.dim(), "one_embedding_lookup: dim=", a.i("dim"), " but the store's rows have ",
                       s.dim());
      auto [k, t] = keys_of(in[0], in[1], s, "one_embedding_lookup");
      Tensor out = empty({k.numel(), s.dim()}, DType::Float32);
      store_call([&] {
        s.lookup(t.data<int32_t>(), k.data<int64_t>(), k.numel(), out.data<float>(), a.b("has_padding"),
                 a.i("padding_idx"));
      });
      return {out};
    });

// The sparse optimizer step on the rows (table_ids, ids) with gradient rows `grad`: increments the step counter
// `self` (a 0-dim float tensor, the optimizer's state["step"]) and applies rule `kind` at that step with learning
// rate `lr` (a 0-dim tensor, so schedulers reach a compiled graph). `hyper` is the rule's other parameters, as
// oneflow_embedding.optim.sparse_rule gives them; entry 0 (the lr) is replaced by `lr`, Adam's step (entry 8) by
// the new step, and Adagrad's entry 0 by lr / (1 + (step - 1) * lr_decay).
FLOW_OP(one_embedding_sparse_update_)
    .schema(
        "one_embedding_sparse_update_(Tensor self, Tensor ids, Tensor table_ids, Tensor grad, Tensor lr, *, "
        "int store, int kind, float[] hyper, float lr_decay=0, bool has_padding=False, int padding_idx=0) -> "
        "Tensor")
    .traits(kNonDifferentiable)
    .meta([](const TensorList& in, const Attrs&) -> std::vector<TensorMeta> {
      return {{in[0].sizes(), in[0].dtype(), in[0].device()}};
    })
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      const char* op = "one_embedding_sparse_update_";
      Store& s = store_of(a, op);
      const Tensor& step = in[0];
      FLOW_TYPE_CHECK(step.numel() == 1 && step.dtype() == DType::Float32, op,
                      ": self (the step counter) must be a one-element float32 tensor");
      auto [k, t] = keys_of(in[1], in[2], s, op);
      Tensor g = ops::contiguous(ops::to_dtype(in[3], DType::Float32));
      FLOW_VALUE_CHECK(g.numel() == k.numel() * s.dim(), op, ": grad has ", g.numel(), " elements, expected ",
                       k.numel(), " rows of ", s.dim());
      const int64_t kind = a.i("kind");
      FLOW_VALUE_CHECK(kind >= 0 && kind <= 3, op, ": unknown optimizer kind ", kind);
      const double lr = *ops::contiguous(ops::to_dtype(in[4], DType::Float64)).data<double>();
      std::vector<double> hyper = a.floats("hyper");
      FLOW_VALUE_CHECK(!hyper.empty(), op, ": hyper is empty");
      float* ps = step.data<float>();
      const double n = static_cast<double>(*ps) + 1;
      hyper[0] = lr;
      if (kind == static_cast<int64_t>(OptKind::kAdam)) {
        FLOW_VALUE_CHECK(hyper.size() > 8, op, ": Adam needs 9 hyper-parameters");
        hyper[8] = n;
      } else if (kind == static_cast<int64_t>(OptKind::kAdagrad)) {
        hyper[0] = lr / (1 + (n - 1) * a.f("lr_decay"));
      }
      store_call([&] {
        s.update(t.data<int32_t>(), k.data<int64_t>(), k.numel(), g.data<float>(), static_cast<OptKind>(kind), hyper,
                 a.b("has_padding"), a.i("padding_idx"));
      });
      *ps = static_cast<float>(n);
      step.bump_version();
      return {step};
    });

}  // namespace flow_embedding
