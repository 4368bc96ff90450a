#include "registry.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <map>
#include <memory>
#include <mutex>

namespace flow {
namespace {

// Ops are registered by static initializers: the core's own, then those of plugin libraries loaded later
// (oneflow.ops.load_library). New definitions wait in `pending` until the next lookup finalizes them, which
// happens after each FLOW_OP statement has run its whole builder chain. Errors found while a plugin registers
// are kept in `errors` (an exception escaping a static initializer would end the process) and raised to
// Python by take_registration_errors().
struct Registry {
  std::map<std::string, std::unique_ptr<OpDef>> ops;
  std::vector<OpDef*> pending;
  std::vector<std::string> errors;
  std::vector<std::unique_ptr<OpDef>> rejected;  // defs of failed registrations: their builders still write
  std::vector<const OpDef*> invalid;             // registered, then found broken (a bad schema): removed
  std::atomic<bool> has_pending{false};
  std::mutex mu;
};
Registry& registry() {
  static Registry* r = new Registry();
  return *r;
}

std::string trim(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}

// Split on commas that are not inside brackets.
std::vector<std::string> split_args(const std::string& s) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '[' || c == '(') ++depth;
    if (c == ']' || c == ')') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!trim(cur).empty()) out.push_back(trim(cur));
  return out;
}

// The meta function of an op whose compute only builds metadata: run it on storage-less meta twins of the
// inputs and report the outputs on the inputs' device.
MetaFn meta_via_compute(const OpDef* d) {
  return [d](const TensorList& in, const Attrs& attrs) {
    Device dev = common_device(in, d->name.c_str());
    TensorList twins;
    twins.reserve(in.size());
    for (const Tensor& t : in) twins.push_back(t.defined() ? to_meta(t) : Tensor());
    const ComputeFn& fn = d->compute[static_cast<int>(DeviceType::CPU)];
    FLOW_RUNTIME_CHECK(static_cast<bool>(fn), d->name, ": meta_from_compute needs a compute function");
    std::vector<TensorMeta> out;
    for (const Tensor& t : fn(twins, attrs)) out.push_back({t.sizes(), t.dtype(), dev});
    return out;
  };
}

void finalize_one(Registry& r, OpDef& d) {
  if (d.has(kComposite) && (d.backward || !d.compute[0])) {
    r.errors.push_back("composite op '" + d.name + "' needs a compute function and no backward");
    d.traits &= ~static_cast<uint64_t>(kComposite);
  }
  const auto& attrs = d.schema.attr_args;
  for (size_t k = 0; k < attrs.size(); ++k)
    if (attrs[k].name == "device" && attrs[k].type == ArgType::Device) d.device_attr = static_cast<int>(k);
  // a composite's meta is its definition run on meta tensors (its parts have meta functions)
  if ((d.meta_by_compute || d.has(kComposite)) && !d.meta) d.meta = meta_via_compute(&d);
  if (!d.want_inplace) return;
  auto ip = std::make_unique<OpDef>(d);
  ip->name = d.name + "_";
  ip->schema.name = ip->name;
  ip->traits |= kInplace;
  ip->functional = &d;
  ip->inplace = nullptr;
  ip->want_inplace = false;
  d.inplace = ip.get();
  if (r.ops.count(ip->name)) {
    r.errors.push_back("op '" + ip->name + "' registered twice (as an op and as " + d.name + "'s in-place variant)");
    return;
  }
  r.ops[ip->name] = std::move(ip);
}

void ensure_final() {
  Registry& r = registry();
  if (!r.has_pending.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<OpDef*> todo;
  todo.swap(r.pending);
  for (OpDef* d : todo) {
    if (std::find(r.invalid.begin(), r.invalid.end(), d) != r.invalid.end()) {
      auto it = r.ops.find(d->name);
      r.rejected.push_back(std::move(it->second));
      r.ops.erase(it);
      continue;
    }
    finalize_one(r, *d);
  }
  r.invalid.clear();
  r.has_pending.store(false, std::memory_order_release);
}

}  // namespace

// An attribute's default as written in a schema ("None", "True", "-1", "0.5", "[1, 2]", "'mean'"), parsed once
// when the schema is, so that calls copy a value instead of parsing text.
static AttrValue parse_default_value(const ArgDef& a, const std::string& schema) {
  const std::string& t = a.default_text;
  if (t == "None") return std::monostate{};
  // the items of a list default; a single number stands for a one-item list (int[2] stride=1)
  auto items = [&] {
    std::string body = t;
    if (!body.empty() && body[0] == '[') body = body.substr(1, body.size() - 2);
    std::vector<std::string> out;
    size_t pos = 0;
    while (pos < body.size()) {
      size_t c = body.find(',', pos);
      std::string item = trim(body.substr(pos, c == std::string::npos ? std::string::npos : c - pos));
      if (!item.empty()) out.push_back(item);
      if (c == std::string::npos) break;
      pos = c + 1;
    }
    return out;
  };
  try {
    switch (a.type) {
      case ArgType::Bool: return t == "True" || t == "true" || t == "1";
      case ArgType::Int: return static_cast<int64_t>(std::stoll(t));
      case ArgType::Float: return std::stod(t);
      case ArgType::Scalar:
        if (t == "True" || t == "False") return Scalar(t == "True");
        if (t.find_first_of(".eEn") != std::string::npos) return Scalar(std::stod(t));
        return Scalar(static_cast<int64_t>(std::stoll(t)));
      case ArgType::Str:
        if (t.size() >= 2 && (t[0] == '\'' || t[0] == '"')) return t.substr(1, t.size() - 2);
        return t;
      case ArgType::IntList: {
        std::vector<int64_t> v;
        for (const std::string& i : items()) v.push_back(std::stoll(i));
        return v;
      }
      case ArgType::FloatList: {
        std::vector<double> v;
        for (const std::string& i : items()) v.push_back(std::stod(i));
        return v;
      }
      default: return std::monostate{};
    }
  } catch (const std::logic_error&) {  // stoll/stod: a default the type cannot hold is a schema bug
    fail(ErrorKind::Runtime, "bad default '", t, "' for argument '", a.name, "' in schema ", schema);
  }
}

Schema parse_schema(const std::string& text) {
  Schema s;
  s.text = text;
  auto lp = text.find('(');
  auto arrow = text.rfind("->");
  auto rp = text.rfind(')', arrow);
  FLOW_RUNTIME_CHECK(lp != std::string::npos && rp != std::string::npos && arrow != std::string::npos,
                     "bad schema: ", text);
  s.name = trim(text.substr(0, lp));
  std::string ret = trim(text.substr(arrow + 2));
  if (ret == "Tensor[]") {
    s.num_outputs = -1;
  } else if (!ret.empty() && ret[0] == '(') {
    s.num_outputs = static_cast<int>(split_args(ret.substr(1, ret.size() - 2)).size());
  } else {
    s.num_outputs = 1;
  }
  bool kwonly = false;
  for (const std::string& a : split_args(text.substr(lp + 1, rp - lp - 1))) {
    if (a == "*") {
      kwonly = true;
      continue;
    }
    ArgDef d;
    d.kwarg_only = kwonly;
    std::string decl = a;
    auto eq = a.find('=');
    if (eq != std::string::npos) {
      d.has_default = true;
      d.default_text = trim(a.substr(eq + 1));
      decl = trim(a.substr(0, eq));
    }
    auto sp = decl.rfind(' ');
    FLOW_RUNTIME_CHECK(sp != std::string::npos, "bad schema argument '", a, "' in ", text);
    std::string type = trim(decl.substr(0, sp));
    d.name = trim(decl.substr(sp + 1));
    if (type.size() > 1 && type.back() == '?') {
      d.optional = true;
      type.pop_back();
    }
    if (type == "Tensor") d.type = ArgType::Tensor;
    else if (type == "Tensor(strict)") {
      d.type = ArgType::Tensor;
      d.strict_tensor = true;
    } else if (type == "Tensor[]") d.type = ArgType::TensorList;
    else if (type == "Tensor?[]") {
      d.type = ArgType::TensorList;
      d.list_elem_optional = true;
    } else if (type == "int") d.type = ArgType::Int;
    else if (type == "int[]" || type.rfind("int[", 0) == 0) d.type = ArgType::IntList;
    else if (type == "float") d.type = ArgType::Float;
    else if (type == "float[]") d.type = ArgType::FloatList;
    else if (type == "bool") d.type = ArgType::Bool;
    else if (type == "str") d.type = ArgType::Str;
    else if (type == "Scalar") d.type = ArgType::Scalar;
    else if (type == "ScalarType") d.type = ArgType::ScalarType;
    else if (type == "Device") d.type = ArgType::Device;
    else fail(ErrorKind::Runtime, "unknown type '", type, "' in schema ", text);
    if (d.has_default && d.type != ArgType::Tensor && d.type != ArgType::TensorList)
      d.default_value = parse_default_value(d, text);
    if (d.type == ArgType::Tensor || d.type == ArgType::TensorList) {
      s.order.push_back({true, static_cast<int>(s.tensor_args.size())});
      s.tensor_args.push_back(d);
    } else {
      s.order.push_back({false, static_cast<int>(s.attr_args.size())});
      s.attr_args.push_back(d);
    }
  }
  // The flat inputs say where a list ends only when it is the one list and the last tensor parameter.
  int lists = 0;
  bool list_then_tensor = false;
  for (const ArgDef& t : s.tensor_args) {
    if (t.type == ArgType::TensorList) ++lists;
    else if (lists > 0) list_then_tensor = true;
  }
  if (lists > 1 || list_then_tensor) {
    ArgDef d;
    d.name = kListLengthsAttr;
    d.type = ArgType::IntList;
    d.kwarg_only = true;
    d.has_default = true;
    d.default_text = "[]";
    d.default_value = std::vector<int64_t>{};
    s.list_lengths_attr = static_cast<int>(s.attr_args.size());
    s.attr_args.push_back(d);  // not in `order`: no Python parameter
  }
  return s;
}

std::vector<InputSpan> split_inputs(const TensorList& in, const Attrs& attrs) {
  const Schema* s = attrs.schema;
  FLOW_RUNTIME_CHECK(s != nullptr, "split_inputs: attributes without a schema");
  const std::vector<int64_t>* lengths = nullptr;
  if (s->list_lengths_attr >= 0) {
    lengths = &attrs.ints(kListLengthsAttr);
    int64_t lists = 0;
    for (const ArgDef& t : s->tensor_args) lists += t.type == ArgType::TensorList;
    FLOW_RUNTIME_CHECK(static_cast<int64_t>(lengths->size()) == lists, s->name, ": attribute '", kListLengthsAttr,
                       "' must give one length per tensor list (", lists, "), got ", lengths->size());
  }
  std::vector<InputSpan> out(s->tensor_args.size());
  size_t pos = 0, list = 0;
  for (size_t k = 0; k < s->tensor_args.size(); ++k) {
    const ArgDef& t = s->tensor_args[k];
    size_t n = 1;
    if (t.type == ArgType::TensorList) {
      // without recorded lengths the one list is the last tensor param and takes what the others leave
      int64_t len = lengths ? (*lengths)[list++]
                            : static_cast<int64_t>(in.size()) - static_cast<int64_t>(s->tensor_args.size() - 1);
      FLOW_RUNTIME_CHECK(len >= 0 && static_cast<size_t>(len) <= in.size() - std::min(pos, in.size()), s->name,
                         ": the inputs do not hold list '", t.name, "' (", len, " tensors from input ", pos, " of ",
                         in.size(), ")");
      n = static_cast<size_t>(len);
    }
    FLOW_RUNTIME_CHECK(pos + n <= in.size(), s->name, ": missing input '", t.name, "' (", in.size(), " inputs)");
    out[k] = InputSpan{in.data() + pos, n};
    pos += n;
  }
  FLOW_RUNTIME_CHECK(pos == in.size(), s->name, ": got ", in.size(), " inputs but the schema's tensor parameters ",
                     "and list lengths account for ", pos);
  return out;
}

TensorList flatten_lists(const Schema& s, const std::vector<TensorList>& per_param, Attrs& attrs) {
  FLOW_RUNTIME_CHECK(per_param.size() == s.tensor_args.size(), s.name, ": expected ", s.tensor_args.size(),
                     " tensor arguments, got ", per_param.size());
  TensorList flat;
  std::vector<int64_t> lengths;
  for (size_t k = 0; k < per_param.size(); ++k) {
    if (s.tensor_args[k].type == ArgType::TensorList) lengths.push_back(static_cast<int64_t>(per_param[k].size()));
    else
      FLOW_RUNTIME_CHECK(per_param[k].size() == 1, s.name, ": argument '", s.tensor_args[k].name,
                         "' is one Tensor, got a list of ", per_param[k].size());
    flat.insert(flat.end(), per_param[k].begin(), per_param[k].end());
  }
  attrs.schema = &s;
  if (s.list_lengths_attr >= 0) {
    if (attrs.values.size() < s.attr_args.size()) attrs.values.resize(s.attr_args.size());
    attrs.values[s.list_lengths_attr] = std::move(lengths);
  }
  return flat;
}

std::vector<std::string> trait_names(uint64_t t) {
  static const std::pair<uint64_t, const char*> names[] = {{kElementwise, "elementwise"},
                                                           {kBroadcastBinary, "broadcast_binary"},
                                                           {kReduction, "reduction"},
                                                           {kMatmulLike, "matmul_like"},
                                                           {kView, "view"},
                                                           {kInplace, "inplace"},
                                                           {kRandom, "random"},
                                                           {kUnary, "unary"},
                                                           {kNormalization, "normalization"},
                                                           {kLoss, "loss"},
                                                           {kIndexing, "indexing"},
                                                           {kShape, "shape"},
                                                           {kCreation, "creation"},
                                                           {kConvolution, "convolution"},
                                                           {kPooling, "pooling"},
                                                           {kComparison, "comparison"},
                                                           {kBackwardHelper, "backward_helper"},
                                                           {kDataDependentShape, "data_dependent_shape"},
                                                           {kNonDifferentiable, "non_differentiable"},
                                                           {kOptimizer, "optimizer"},
                                                           {kComposite, "composite"},
                                                           {kAliasedOutputOk, "aliased_output_ok"},
                                                           {kNoInputOverlap, "no_input_overlap"},
                                                           {kScan, "scan"},
                                                           {kSideEffect, "side_effect"}};
  std::vector<std::string> out;
  for (auto& p : names)
    if (t & p.first) out.push_back(p.second);
  return out;
}

// ---- Attrs --------------------------------------------------------------------------------------------
bool Attrs::has(const char* name) const {
  if (schema == nullptr) return false;
  for (const ArgDef& d : schema->attr_args)
    if (d.name == name) return true;
  return false;
}
void Attrs::unknown(const char* name) const {
  FLOW_RUNTIME_CHECK(schema != nullptr, "attribute '", name, "' read without a schema (", values.size(),
                     " unnamed values)");
  FLOW_RUNTIME_CHECK(!has(name), schema->name, ": attribute '", name, "' has no value (", values.size(), " of ",
                     schema->attr_args.size(), " given)");
  std::string known;
  for (const ArgDef& d : schema->attr_args) known += (known.empty() ? "" : ", ") + d.name;
  fail(ErrorKind::Runtime, schema->name, ": no attribute named '", name,
       "' (the schema has: ", known.empty() ? "none" : known, ")");
}
void Attrs::wrong_type(const char* name, const char* expected) const {
  fail(ErrorKind::Type, schema ? schema->name : "op", ": attribute '", name, "': expected ", expected);
}
int64_t Attrs::convert_i(const AttrValue& v, const char* name) const {
  if (auto p = std::get_if<bool>(&v)) return *p;
  if (auto p = std::get_if<Scalar>(&v)) return p->to_int();
  wrong_type(name, "an int");
}
double Attrs::convert_f(const AttrValue& v, const char* name) const {
  if (auto p = std::get_if<int64_t>(&v)) return static_cast<double>(*p);
  if (auto p = std::get_if<Scalar>(&v)) return p->to_double();
  if (auto p = std::get_if<bool>(&v)) return *p;
  wrong_type(name, "a float");
}
bool Attrs::convert_b(const AttrValue& v, const char* name) const {
  if (auto p = std::get_if<int64_t>(&v)) return *p != 0;
  wrong_type(name, "a bool");
}
Scalar Attrs::convert_s(const AttrValue& v, const char* name) const {
  if (auto p = std::get_if<double>(&v)) return Scalar(*p);
  if (auto p = std::get_if<int64_t>(&v)) return Scalar(*p);
  if (auto p = std::get_if<bool>(&v)) return Scalar(*p);
  wrong_type(name, "a number");
}

// ---- trait data ---------------------------------------------------------------------------------------
const char* combiner_name(Combiner c) {
  switch (c) {
    case Combiner::None: return "none";
    case Combiner::Sum: return "sum";
    case Combiner::Mean: return "mean";
    case Combiner::Max: return "max";
    case Combiner::Min: return "min";
    case Combiner::Prod: return "prod";
    case Combiner::Any: return "any";
    case Combiner::All: return "all";
  }
  return "?";
}
std::string SbpAxis::str() const {
  if (kind == Split) return "S(" + std::to_string(dim) + ")";
  if (kind == Broadcast) return "B";
  return std::string("P(") + combiner_name(partial) + ")";
}
std::string SbpSignature::str() const {
  std::string s;
  for (size_t i = 0; i < inputs.size(); ++i) s += (i ? ", " : "") + inputs[i].str();
  s += " -> ";
  for (size_t i = 0; i < outputs.size(); ++i) s += (i ? ", " : "") + outputs[i].str();
  return s;
}

// ---- builder ------------------------------------------------------------------------------------------
OpBuilder& OpBuilder::make(const char* name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto def = std::make_unique<OpDef>();
  def->name = name;
  OpDef* raw = def.get();
  if (r.ops.find(name) != r.ops.end()) {
    r.errors.push_back(std::string("op '") + name + "' registered twice");
    r.rejected.push_back(std::move(def));
  } else {
    r.ops[name] = std::move(def);
    r.pending.push_back(raw);
    r.has_pending.store(true, std::memory_order_release);
  }
  static std::vector<std::unique_ptr<OpBuilder>>* builders = new std::vector<std::unique_ptr<OpBuilder>>();
  builders->push_back(std::unique_ptr<OpBuilder>(new OpBuilder(raw)));
  return *builders->back();
}
OpBuilder& OpBuilder::schema(const char* text) {
  try {
    def_->schema = parse_schema(text);
    FLOW_RUNTIME_CHECK(def_->schema.name == def_->name, "schema name '", def_->schema.name, "' does not match op '",
                       def_->name, "'");
  } catch (const std::exception& e) {  // recorded, not thrown: this runs in a static initializer
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    r.errors.push_back(std::string("op '") + def_->name + "': " + e.what());
    r.invalid.push_back(def_);
  }
  return *this;
}
OpBuilder& OpBuilder::traits(uint64_t t) {
  def_->traits |= t;
  return *this;
}
OpBuilder& OpBuilder::meta(MetaFn f) {
  def_->meta = std::move(f);
  return *this;
}
OpBuilder& OpBuilder::cpu(ComputeFn f) { return compute(DeviceType::CPU, std::move(f)); }
OpBuilder& OpBuilder::cpu_out(OutKernelFn f) { return out_kernel(DeviceType::CPU, std::move(f)); }
OpBuilder& OpBuilder::compute(DeviceType d, ComputeFn f) {
  def_->compute[static_cast<int>(d)] = std::move(f);
  return *this;
}
OpBuilder& OpBuilder::out_kernel(DeviceType d, OutKernelFn f) {
  def_->out_kernel[static_cast<int>(d)] = std::move(f);
  return *this;
}
OpBuilder& OpBuilder::backward(BackwardFn f) {
  def_->backward = std::move(f);
  return *this;
}
OpBuilder& OpBuilder::save_inputs(std::vector<int> idx) {
  def_->saved_inputs = std::move(idx);
  return *this;
}
OpBuilder& OpBuilder::save_inputs(std::vector<int> idx, std::vector<std::vector<int>> needed_by) {
  FLOW_CHECK(needed_by.size() == idx.size(), Runtime, def_->name, ": save_inputs needs one user list per input");
  def_->saved_inputs = std::move(idx);
  def_->saved_input_users = std::move(needed_by);
  return *this;
}
OpBuilder& OpBuilder::save_outputs(std::vector<int> idx) {
  def_->saved_outputs = std::move(idx);
  return *this;
}
OpBuilder& OpBuilder::save_outputs(std::vector<int> idx, std::vector<std::vector<int>> needed_by) {
  FLOW_CHECK(needed_by.size() == idx.size(), Runtime, def_->name, ": save_outputs needs one user list per output");
  def_->saved_outputs = std::move(idx);
  def_->saved_output_users = std::move(needed_by);
  return *this;
}
OpBuilder& OpBuilder::nondiff_outputs(std::vector<int> idx) {
  def_->nondiff_outputs = std::move(idx);
  return *this;
}
OpBuilder& OpBuilder::inplace_variant() {
  def_->want_inplace = true;
  return *this;
}
OpBuilder& OpBuilder::meta_from_compute() {
  def_->meta_by_compute = true;
  return *this;
}
OpBuilder& OpBuilder::combiner(Combiner c) {
  def_->combiner = c;
  return *this;
}
OpBuilder& OpBuilder::einsum(const char* spec) {
  def_->einsum = spec;
  return *this;
}
OpBuilder& OpBuilder::dims(DimsFn f) {
  def_->dims = std::move(f);
  return *this;
}
OpBuilder& OpBuilder::dims_attr(const char* name) {
  std::string n = name;
  OpDef* d = def_;
  def_->dims = [d, n](const TensorList& in, const Attrs& a) {
    int64_t nd = in.empty() || !in[0].defined() ? 0 : in[0].dim();
    int k = -1;
    for (size_t j = 0; j < d->schema.attr_args.size(); ++j)
      if (d->schema.attr_args[j].name == n) k = static_cast<int>(j);
    std::vector<int64_t> out;
    const AttrValue& v = k < 0 || k >= static_cast<int>(a.values.size()) ? AttrValue{} : a.values[k];
    if (auto p = std::get_if<int64_t>(&v)) out.push_back(*p);
    else if (auto q = std::get_if<std::vector<int64_t>>(&v)) out = *q;
    if (out.empty())  // None or [] reduce over every dim
      for (int64_t i = 0; i < nd; ++i) out.push_back(i);
    for (int64_t& x : out) x = wrap_dim(x, std::max<int64_t>(nd, 1), d->name.c_str());
    return out;
  };
  return *this;
}
OpBuilder& OpBuilder::dim_map(DimMapFn f) {
  def_->dim_map = std::move(f);
  return *this;
}
OpBuilder& OpBuilder::sbp_rule(SbpRuleFn f) {
  def_->sbp_rule = std::move(f);
  return *this;
}
OpBuilder& OpBuilder::decomposition(ComputeFn f) {
  def_->decomposition = std::move(f);
  return *this;
}

std::vector<std::string> take_registration_errors() {
  ensure_final();
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> out;
  out.swap(r.errors);
  return out;
}

const OpDef* find_op(const std::string& name) {
  ensure_final();
  auto& ops = registry().ops;
  auto it = ops.find(name);
  return it == ops.end() ? nullptr : it->second.get();
}
const OpDef& get_op(const std::string& name) {
  const OpDef* d = find_op(name);
  FLOW_RUNTIME_CHECK(d != nullptr, "no op named '", name, "' is registered");
  return *d;
}
std::vector<const OpDef*> all_ops() {
  ensure_final();
  std::vector<const OpDef*> out;
  for (auto& kv : registry().ops) out.push_back(kv.second.get());
  return out;
}

// ---- helpers ------------------------------------------------------------------------------------------
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      fail(ErrorKind::Runtime, op, ": The size of tensor a (", da, ") must match the size of tensor b (", db,
           ") at non-singleton dimension ", i, " (shapes ", shape_str(a), " and ", shape_str(b), ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

DType result_type(const TensorList& in) {
  // Three priority classes; a lower class only matters when it has a higher kind (bool < int < float).
  auto kind = [](DType t) { return t == DType::Bool ? 0 : is_floating(t) ? 2 : 1; };
  std::optional<DType> cls[3];
  for (const Tensor& t : in) {
    if (!t.defined()) continue;
    int c = t.impl()->is_wrapped_number ? 2 : t.dim() == 0 ? 1 : 0;
    DType d = t.dtype();
    if (c == 2 && is_floating(d)) d = default_float_dtype();
    cls[c] = cls[c] ? promote_types(*cls[c], d) : d;
  }
  std::optional<DType> r;
  for (int c = 0; c < 3; ++c) {
    if (!cls[c]) continue;
    if (!r) {
      r = cls[c];
    } else if (kind(*cls[c]) > kind(*r)) {
      r = promote_types(*r, *cls[c]);
    }
  }
  return r ? *r : default_float_dtype();
}

Device common_device(const TensorList& in, const char* op) {
  std::optional<Device> d;
  for (const Tensor& t : in) {
    if (!t.defined() || t.impl()->is_wrapped_number) continue;
    // a 0-dim CPU tensor goes with tensors on any device, as in PyTorch (an optimizer's step counter)
    if (t.dim() == 0 && t.device().type == DeviceType::CPU) continue;
    if (!d) d = t.device();
    else if (*d != t.device())
      fail(ErrorKind::Runtime, op, ": Expected all tensors to be on the same device, but found at least two devices, ",
           d->str(), " and ", t.device().str(), "!");
  }
  return d ? *d : Device{};  // CPU scalars alone run on the CPU
}

}  // namespace flow
