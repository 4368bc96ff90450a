// The op registry: every operation is defined once here, with its schema, meta inference, kernels per
// device, backward formula and traits. Eager dispatch, autograd, interception, graph tracing and SBP
// inference all read the same OpDef.
//
// Defining an op (in one file per family):
//
//   FLOW_OP(mul)
//       .schema("mul(Tensor self, Tensor other) -> Tensor")
//       .traits(kElementwise | kBroadcastBinary)
//       .meta(meta_binary)
//       .cpu_out(mul_kernel)                   // writes into preallocated outputs (enables in-place/out=)
//       .save_inputs({0, 1})
//       .inplace_variant()                     // also registers "mul_"
//       .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
//         return {c.needs(0) ? ops::mul(g[0], c.input(1)) : Tensor(),
//                 c.needs(1) ? ops::mul(g[0], c.input(0)) : Tensor()};
//       });
//
// Schema types: Tensor, Tensor?, Tensor[], Tensor?[], int, int?, int[], int[]?, float, float?, float[],
// bool, bool?, str, str?, Scalar, Scalar?, ScalarType, ScalarType?, Device?. An attribute named `device` (type
// Device?) makes the op run on that device when it has no tensor input there (creation ops); None = the
// inputs' device, or the CPU. Tensor params are inputs; the rest are attributes. Inputs reach kernels flattened
// in schema order.
//
// Several tensor lists: a schema may have any number of Tensor[] params, anywhere. Where the flat inputs alone
// would not say where each list ends (more than one list, or a list followed by another tensor param),
// parse_schema appends a reserved attribute `int[] _list_lengths` (Schema::list_lengths_attr): one length per
// Tensor[] param, in schema order. It is no Python parameter (the binding fills it while parsing the lists),
// but it is an attribute like any other: dispatch handlers find it in their attrs dict and pass it back through
// op.redispatch / op.meta. Kernels read their lists with split_inputs(); C++ callers build inputs and lengths
// with flatten_lists() (or ops::call_lists).

#pragma once
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "../core/scalar.h"
#include "../core/tensor.h"
#include "op_traits.h"

namespace flow {

// ---- traits -------------------------------------------------------------------------------------------
enum OpTrait : uint64_t {
  kElementwise = 1u << 0,
  kBroadcastBinary = 1u << 1,
  kReduction = 1u << 2,
  kMatmulLike = 1u << 3,
  kView = 1u << 4,
  kInplace = 1u << 5,
  kRandom = 1u << 6,
  kUnary = 1u << 7,
  kNormalization = 1u << 8,
  kLoss = 1u << 9,
  kIndexing = 1u << 10,
  kShape = 1u << 11,
  kCreation = 1u << 12,
  kConvolution = 1u << 13,
  kPooling = 1u << 14,
  kComparison = 1u << 15,
  kBackwardHelper = 1u << 16,  // exists to express another op's backward
  kDataDependentShape = 1u << 17,
  kNonDifferentiable = 1u << 18,
  kOptimizer = 1u << 19,
  // Defined by other ops: runs above autograd and interception, so its parts are recorded and seen one
  // by one (PyTorch's CompositeImplicitAutograd). Needs a compute function and no backward.
  kComposite = 1u << 20,
  // Its in-place form may write through an output whose elements share memory (an expanded tensor): every
  // write stores the same kind of value, so the result is well defined. PyTorch allows fill_ and
  // masked_fill_ there and refuses other in-place ops.
  kAliasedOutputOk = 1u << 21,
  // Reads its inputs in another order than it writes its output (gather/scatter/index_* kernels): an output
  // (out= or the in-place self) sharing any memory with another input raises, as PyTorch's assert_no_overlap.
  kNoInputOverlap = 1u << 22,
  // A running combination along one dim (cumsum, cumprod, cummax, logcumsumexp): the output keeps the input's
  // shape, so it is not a reduction, but the dim it scans cannot be split without communication.
  kScan = 1u << 23,
  // Talks to the outside (a collective, an external store): never removed, merged, folded or reordered by the
  // graph passes, and run exactly where the program issued it. Python-kernel custom ops may carry it.
  kSideEffect = 1u << 24,
};
std::vector<std::string> trait_names(uint64_t traits);

// ---- schema -------------------------------------------------------------------------------------------
// An attribute's value: None (monostate) or one of the schema types.
using AttrValue = std::variant<std::monostate, bool, int64_t, double, std::vector<int64_t>, std::vector<double>,
                               std::string, Scalar, DType, Device>;

enum class ArgType : int8_t {
  Tensor,
  TensorList,
  Int,
  IntList,
  Float,
  FloatList,
  Bool,
  Str,
  Scalar,
  ScalarType,
  Device
};
struct ArgDef {
  std::string name;
  ArgType type;
  bool optional = false;       // "?": may be None
  bool kwarg_only = false;     // after "*"
  bool has_default = false;
  std::string default_text;    // as written in the schema
  AttrValue default_value;     // default_text parsed once, when the schema is (None where it has none)
  bool list_elem_optional = false;  // Tensor?[]
  // A Tensor argument takes Python numbers (as wrapped 0-dim tensors) unless written "Tensor(strict)": for
  // ops that PyTorch declares without a Scalar overload, where a number is a TypeError (gcd, igamma, ...).
  bool strict_tensor = false;
};
struct Schema {
  std::string name;
  // Every parameter in written order: (is_tensor, index into tensor_args or attr_args).
  std::vector<std::pair<bool, int>> order;
  std::vector<ArgDef> tensor_args;  // in order
  std::vector<ArgDef> attr_args;    // in order
  int num_outputs = 1;              // -1: a variable number (Tensor[])
  std::string text;
  int list_lengths_attr = -1;       // index of the reserved `_list_lengths` attribute, -1 when none
};
Schema parse_schema(const std::string& text);
constexpr const char* kListLengthsAttr = "_list_lengths";

// ---- attributes ---------------------------------------------------------------------------------------
// Kernels, meta functions and backward formulas read attributes by their schema name (`a.f("alpha")`), so that
// a schema edit (a new attribute, a reordering) cannot make them read another attribute's value. The dispatcher
// attaches the called op's schema before any of them runs; a name the schema lacks raises a RuntimeError naming
// the op and the attribute. Integer arguments are refused at compile time (a literal 0 would otherwise convert
// to a null name). Code that walks a schema (dispatcher, bindings, autograd) reads `values` by position.
struct Attrs {
  std::vector<AttrValue> values;
  const Schema* schema = nullptr;

  Attrs() = default;
  Attrs(std::initializer_list<AttrValue> v) : values(v) {}

  // Position of attribute `name` in the schema; raises if the schema lacks it or holds no value for it. A
  // short scan comparing lengths first (`name` is a literal at nearly every call, so its length is folded).
  int index(const char* name) const {
    if (schema != nullptr) {
      const size_t n = std::char_traits<char>::length(name);
      const std::vector<ArgDef>& args = schema->attr_args;
      for (size_t k = 0, e = args.size(); k < e; ++k) {
        const std::string& s = args[k].name;
        if (s.size() == n && std::char_traits<char>::compare(s.data(), name, n) == 0 && k < values.size())
          return static_cast<int>(k);
      }
    }
    unknown(name);
  }
  bool has(const char* name) const;  // whether the schema names attribute `name`
  const AttrValue& at(const char* name) const { return values[index(name)]; }
  bool none(const char* name) const { return std::holds_alternative<std::monostate>(at(name)); }
  // The exact type inline; the conversions a kind of value allows (an int read as a float, ...) out of line.
  int64_t i(const char* name) const {
    const AttrValue& v = at(name);
    if (const auto* p = std::get_if<int64_t>(&v)) return *p;
    return convert_i(v, name);
  }
  double f(const char* name) const {  // accepts int and Scalar values too
    const AttrValue& v = at(name);
    if (const auto* p = std::get_if<double>(&v)) return *p;
    return convert_f(v, name);
  }
  bool b(const char* name) const {
    const AttrValue& v = at(name);
    if (const auto* p = std::get_if<bool>(&v)) return *p;
    return convert_b(v, name);
  }
  Scalar s(const char* name) const {
    const AttrValue& v = at(name);
    if (const auto* p = std::get_if<Scalar>(&v)) return *p;
    return convert_s(v, name);
  }
  DType dtype(const char* name) const { return get<DType>(name, "a dtype"); }
  const std::string& str(const char* name) const { return get<std::string>(name, "a string"); }
  const std::vector<int64_t>& ints(const char* name) const { return get<std::vector<int64_t>>(name, "a list of ints"); }
  const std::vector<double>& floats(const char* name) const {
    return get<std::vector<double>>(name, "a list of floats");
  }
  Device device(const char* name) const { return get<Device>(name, "a device"); }
  std::optional<int64_t> opt_i(const char* n) const { return none(n) ? std::nullopt : std::optional<int64_t>(i(n)); }
  std::optional<double> opt_f(const char* n) const { return none(n) ? std::nullopt : std::optional<double>(f(n)); }
  std::optional<DType> opt_dtype(const char* n) const {
    return none(n) ? std::nullopt : std::optional<DType>(dtype(n));
  }

  // Reads by position do not compile (see above).
  const AttrValue& at(int) const = delete;
  bool none(int) const = delete;
  int64_t i(int) const = delete;
  double f(int) const = delete;
  bool b(int) const = delete;
  Scalar s(int) const = delete;
  DType dtype(int) const = delete;
  const std::string& str(int) const = delete;
  const std::vector<int64_t>& ints(int) const = delete;
  const std::vector<double>& floats(int) const = delete;
  Device device(int) const = delete;
  std::optional<int64_t> opt_i(int) const = delete;
  std::optional<double> opt_f(int) const = delete;
  std::optional<DType> opt_dtype(int) const = delete;

 private:
  template <typename T>
  const T& get(const char* name, const char* expected) const {
    const T* p = std::get_if<T>(&at(name));
    if (p == nullptr) wrong_type(name, expected);
    return *p;
  }
  int64_t convert_i(const AttrValue& v, const char* name) const;
  double convert_f(const AttrValue& v, const char* name) const;
  bool convert_b(const AttrValue& v, const char* name) const;
  Scalar convert_s(const AttrValue& v, const char* name) const;
  [[noreturn]] void unknown(const char* name) const;
  [[noreturn]] void wrong_type(const char* name, const char* expected) const;
};

// ---- op definition ------------------------------------------------------------------------------------
struct TensorMeta {
  Shape sizes;
  DType dtype;
  Device device;
};

struct OpDef;
struct BackwardCtx;

using MetaFn = std::function<std::vector<TensorMeta>(const TensorList& in, const Attrs& attrs)>;
// Computes outputs, allocating them itself (views, data-dependent shapes, composite kernels).
using ComputeFn = std::function<TensorList(const TensorList& in, const Attrs& attrs)>;
// Writes into outputs the dispatcher allocated from meta (or the in-place target / out= tensor).
using OutKernelFn = std::function<void(const TensorList& in, const TensorList& out, const Attrs& attrs)>;
// Returns one gradient per input (undefined where none), written with registered ops.
using BackwardFn = std::function<TensorList(BackwardCtx& ctx, const TensorList& grad_outputs)>;

constexpr int kNumDeviceTypes = 3;

struct OpDef {
  std::string name;
  Schema schema;
  uint64_t traits = 0;
  MetaFn meta;
  ComputeFn compute[kNumDeviceTypes];
  OutKernelFn out_kernel[kNumDeviceTypes];
  BackwardFn backward;
  std::vector<int> saved_inputs;   // indices of inputs the backward reads
  // per saved input (when given): the inputs whose gradients read it; it is saved only if one of them needs
  // a gradient (mul's x in x * 2.0 is not kept), empty = always
  std::vector<std::vector<int>> saved_input_users;
  std::vector<int> saved_outputs;  // indices of outputs the backward reads
  std::vector<std::vector<int>> saved_output_users;  // as saved_input_users, for saved outputs
  const OpDef* inplace = nullptr;      // "name_" variant, if registered
  const OpDef* functional = nullptr;   // for an in-place variant: the op it mutates with
  std::vector<int> nondiff_outputs;    // e.g. indices returned by max(dim)
  bool want_inplace = false;
  int device_attr = -1;          // index of the `device` attribute, -1 when the op has none
  // Its compute function only builds metadata (views, compositions of other ops): on meta tensors it runs as
  // is, and it also serves as the meta function.
  bool meta_by_compute = false;

  // Trait data (op_traits.h): what SBP inference and fusion read.
  Combiner combiner = Combiner::None;  // reductions and scans: how elements combine
  std::string einsum;                  // matmul-like: "ij,jk->ik" ("..." for batch dims)
  DimsFn dims;                         // the dims it acts along
  DimMapFn dim_map;                    // views/reshapes: split dims carried from input 0 to output 0
  SbpRuleFn sbp_rule;                  // a per-op rule replacing the trait-derived candidates
  ComputeFn decomposition;             // the op written with other registry ops (for layers without a rule)

  bool has(uint64_t t) const { return (traits & t) != 0; }
  // Whether the k-th saved input (output) must be kept when the op runs on `inputs`: one of the inputs
  // whose gradients read it needs a gradient (see saved_input_users).
  bool saved_input_needed(size_t k, const TensorList& inputs) const { return needed(saved_input_users, k, inputs); }
  // Whether running on `inputs` keeps input `idx` for backward (in-place variants then snapshot it first).
  bool keeps_input(int idx, const TensorList& inputs) const {
    for (size_t k = 0; k < saved_inputs.size(); ++k)
      if (saved_inputs[k] == idx && saved_input_needed(k, inputs)) return true;
    return false;
  }
  bool saved_output_needed(size_t k, const TensorList& inputs) const { return needed(saved_output_users, k, inputs); }
  static bool needed(const std::vector<std::vector<int>>& users, size_t k, const TensorList& inputs) {
    if (k >= users.size() || users[k].empty()) return true;
    for (int u : users[k])
      if (u >= 0 && static_cast<size_t>(u) < inputs.size() && inputs[u].defined() && inputs[u].requires_grad())
        return true;
    return false;
  }
  bool differentiable() const { return static_cast<bool>(backward); }
  size_t num_inputs_hint() const { return schema.tensor_args.size(); }
};

// Builder returned by FLOW_OP: each call fills the registered OpDef. In-place variants and schema checks
// are derived once, the first time the registry is read.
class OpBuilder {
 public:
  static OpBuilder& make(const char* name);
  OpBuilder& schema(const char* text);
  OpBuilder& traits(uint64_t t);
  OpBuilder& meta(MetaFn f);
  OpBuilder& cpu(ComputeFn f);
  OpBuilder& cpu_out(OutKernelFn f);
  OpBuilder& compute(DeviceType d, ComputeFn f);
  OpBuilder& out_kernel(DeviceType d, OutKernelFn f);
  OpBuilder& backward(BackwardFn f);
  OpBuilder& save_inputs(std::vector<int> idx);
  OpBuilder& save_inputs(std::vector<int> idx, std::vector<std::vector<int>> needed_by);
  OpBuilder& save_outputs(std::vector<int> idx);
  OpBuilder& save_outputs(std::vector<int> idx, std::vector<std::vector<int>> needed_by);
  OpBuilder& nondiff_outputs(std::vector<int> idx);
  OpBuilder& inplace_variant();
  // Trait data (see OpDef).
  OpBuilder& meta_from_compute();
  OpBuilder& combiner(Combiner c);
  OpBuilder& einsum(const char* spec);
  OpBuilder& dims(DimsFn f);
  OpBuilder& dims_attr(const char* name);  // the dims are attribute `name` (int or int[]; empty/None: all)
  OpBuilder& dim_map(DimMapFn f);
  OpBuilder& sbp_rule(SbpRuleFn f);
  OpBuilder& decomposition(ComputeFn f);

 private:
  explicit OpBuilder(OpDef* def) : def_(def) {}
  OpDef* def_;
};

#define FLOW_OP_CONCAT2(a, b) a##b
#define FLOW_OP_CONCAT(a, b) FLOW_OP_CONCAT2(a, b)
#define FLOW_OP(name)                                                                        \
  [[maybe_unused]] static ::flow::OpBuilder& FLOW_OP_CONCAT(flow_op_builder_, __COUNTER__) = \
      ::flow::OpBuilder::make(#name)

// Lookup. `find_op` returns null when absent; `get_op` raises.
const OpDef* find_op(const std::string& name);
const OpDef& get_op(const std::string& name);
std::vector<const OpDef*> all_ops();
// Problems found while ops registered (a name taken twice, a bad schema), cleared once read. Plugins' static
// initializers cannot raise; the loader asks this after loading a library.
std::vector<std::string> take_registration_errors();

// ---- several tensor lists ------------------------------------------------------------------------------
// The inputs of one tensor parameter, a view into the flat input list (one tensor for a Tensor param).
struct InputSpan {
  const Tensor* first = nullptr;
  size_t count = 0;
  size_t size() const { return count; }
  bool empty() const { return count == 0; }
  const Tensor& operator[](size_t i) const { return first[i]; }
  const Tensor* begin() const { return first; }
  const Tensor* end() const { return first + count; }
};
// The flat inputs split per tensor parameter (schema order), by the `_list_lengths` attribute where the schema
// has one. Raises a RuntimeError naming the op when the lengths do not account for every input, so a kernel
// never indexes past the list it was given.
std::vector<InputSpan> split_inputs(const TensorList& in, const Attrs& attrs);
// The flat inputs of a call with one entry per tensor parameter (a Tensor param: a list of one); records the
// lengths in `attrs` when the schema keeps them. `attrs` holds every other attribute already (defaults filled:
// ops::call_lists does that); missing slots are added empty.
TensorList flatten_lists(const Schema& s, const std::vector<TensorList>& per_param, Attrs& attrs);

// ---- helpers for op authors ---------------------------------------------------------------------------
// Broadcast two shapes (raises RuntimeError naming `op` on mismatch).
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
// PyTorch's result_type over tensor inputs (dimensioned > 0-dim > wrapped numbers, by category).
DType result_type(const TensorList& in);
// Check every defined input is on the same device, return it.
Device common_device(const TensorList& in, const char* op);

}  // namespace flow
