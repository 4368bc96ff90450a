// _fused_elementwise: a group of elementwise registry ops run as one pass over memory (the graph compiler's
// elementwise-chain fusion emits it; hidden from Python as a backward helper). The group is a tiny program:
// one instruction per op, evaluated over chunks of the output small enough to stay in L1, each instruction
// calling that op's own CPU kernel on the chunk (one definition of every op's math, so the fused result is
// bitwise the unfused one). Inputs broadcast to the output by index mapping when a chunk is gathered; 0-dim
// inputs (wrapped Python numbers) are handed to the kernels as they are, keeping PyTorch's type promotion.
//
// Program text, instructions separated by "|": `op;dtype;refs;attr;attr...` where refs are `iK` (input K) or `rK`
// (instruction K's result), dtype names the result's dtype and each attr (in the op's schema order) is
// `n` (None), `b0`/`b1`, `i<int>`, `f<float>`, `I<ints,>`, `F<floats,>`, `s<text>`, `Si<int>`, `Sf<float>`,
// `Sb0`/`Sb1`, `D<dtype>` (a dtype by name: casts). The last instruction's result is the output.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include "elementwise.h"
#include "registry.h"

namespace flow {
namespace {

// Chunks of 16K to 64K elements: each instruction is one kernel call per chunk, whose fixed cost (argument
// checks, dispatch) wants long chunks, while the chunk's buffers should stay in L2 and the threads need a few
// chunks each.
constexpr int64_t kMinChunk = 16384, kMaxChunk = 65536;

struct Instr {
  const OpDef* op = nullptr;
  DType dtype = DType::Float32;
  std::vector<int> refs;  // >= 0: input; < 0: -(k + 1) is instruction k's result
  Attrs attrs;
};
using Program = std::vector<Instr>;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream is(s);
  while (std::getline(is, cur, sep)) out.push_back(cur);
  if (!s.empty() && s.back() == sep) out.emplace_back();
  return out;
}

double parse_f(const std::string& s) { return std::strtod(s.c_str(), nullptr); }  // hex floats are exact

DType parse_dtype(const std::string& s) {
  for (int k = 0; k < kNumDTypes; ++k)
    if (s == dtype_name(static_cast<DType>(k))) return static_cast<DType>(k);
  FLOW_VALUE_CHECK(false, "_fused_elementwise: unknown dtype '", s, "' in the program");
  return DType::Float32;
}

AttrValue parse_attr(const std::string& t) {
  FLOW_VALUE_CHECK(!t.empty(), "_fused_elementwise: empty attribute in the program");
  const std::string v = t.substr(1);
  switch (t[0]) {
    case 'n': return std::monostate{};
    case 'b': return v == "1";
    case 'i': return static_cast<int64_t>(std::strtoll(v.c_str(), nullptr, 10));
    case 'f': return parse_f(v);
    case 's': return v;
    case 'D': return parse_dtype(v);
    case 'I': {
      std::vector<int64_t> r;
      for (auto& x : split(v, ','))
        if (!x.empty()) r.push_back(std::strtoll(x.c_str(), nullptr, 10));
      return r;
    }
    case 'F': {
      std::vector<double> r;
      for (auto& x : split(v, ','))
        if (!x.empty()) r.push_back(parse_f(x));
      return r;
    }
    case 'S': {
      FLOW_VALUE_CHECK(!v.empty(), "_fused_elementwise: bad scalar attribute '", t, "'");
      const std::string w = v.substr(1);
      if (v[0] == 'i') return Scalar(static_cast<int64_t>(std::strtoll(w.c_str(), nullptr, 10)));
      if (v[0] == 'f') return Scalar(parse_f(w));
      if (v[0] == 'b') return Scalar(w == "1");
      break;
    }
    default: break;
  }
  FLOW_VALUE_CHECK(false, "_fused_elementwise: bad attribute '", t, "' in the program");
  return std::monostate{};
}

Program parse_program(const std::string& text, size_t num_inputs) {
  Program p;
  for (const std::string& line : split(text, '|')) {
    if (line.empty()) continue;
    auto f = split(line, ';');
    FLOW_VALUE_CHECK(f.size() >= 3, "_fused_elementwise: bad instruction '", line, "'");
    Instr in;
    in.op = find_op(f[0]);
    FLOW_VALUE_CHECK(in.op != nullptr && in.op->has(kElementwise) &&
                         in.op->out_kernel[static_cast<int>(DeviceType::CPU)],
                     "_fused_elementwise: '", f[0], "' is not an elementwise op with a CPU kernel");
    in.dtype = parse_dtype(f[1]);
    for (const std::string& r : split(f[2], ',')) {
      FLOW_VALUE_CHECK(r.size() >= 2 && (r[0] == 'i' || r[0] == 'r'), "_fused_elementwise: bad operand '", r, "'");
      int k = std::atoi(r.c_str() + 1);
      bool ok = r[0] == 'i' ? (k >= 0 && static_cast<size_t>(k) < num_inputs) : (k >= 0 && k < int(p.size()));
      FLOW_VALUE_CHECK(ok, "_fused_elementwise: operand '", r, "' out of range");
      in.refs.push_back(r[0] == 'i' ? k : -(k + 1));
    }
    in.attrs.schema = &in.op->schema;
    for (size_t a = 3; a < f.size(); ++a) in.attrs.values.push_back(parse_attr(f[a]));
    FLOW_VALUE_CHECK(in.attrs.values.size() == in.op->schema.attr_args.size(), "_fused_elementwise: '", f[0],
                     "' takes ", in.op->schema.attr_args.size(), " attributes, the program gives ",
                     in.attrs.values.size());
    p.push_back(std::move(in));
  }
  FLOW_VALUE_CHECK(!p.empty(), "_fused_elementwise: empty program");
  return p;
}

// Parsed once per program text (a compiled graph calls the op with the same few programs every step).
std::shared_ptr<const Program> program_for(const std::string& text, size_t num_inputs) {
  static std::mutex mu;
  // keyed by the text and the input count (a program's operand checks depend on it), without building a key
  static std::unordered_map<std::string, std::vector<std::pair<size_t, std::shared_ptr<const Program>>>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto& entries = cache[text];
  for (const auto& [k, p] : entries)
    if (k == num_inputs) return p;
  auto p = std::make_shared<const Program>(parse_program(text, num_inputs));
  entries.emplace_back(num_inputs, p);
  return p;
}

// Copies elements [b, e) of `src` broadcast to `shape` (row-major order) into the dense buffer `dst`.
void gather(const Tensor& src, const Shape& shape, int64_t b, int64_t e, char* dst) {
  const int nd = static_cast<int>(shape.size());
  const int off = nd - static_cast<int>(src.dim());
  Shape st(nd, 0), idx(nd, 0);
  for (int d = 0; d < src.dim(); ++d) st[off + d] = src.sizes()[d] == 1 ? 0 : src.strides()[d];
  int64_t rem = b, pos = 0;
  for (int d = nd - 1; d >= 0; --d) {
    idx[d] = rem % shape[d];
    rem /= shape[d];
    pos += idx[d] * st[d];
  }
  const int64_t es = itemsize(src.dtype());
  const char* base = static_cast<const char*>(src.raw_data());
  // a run along the innermost dimension at a time: one copy where it is dense (a bias over the last
  // dimension), one element repeated where it broadcasts, element by element otherwise
  const int64_t inner = shape[nd - 1], ist = st[nd - 1];
  for (int64_t i = b; i < e;) {
    const int64_t run = std::min(inner - idx[nd - 1], e - i);
    const char* s = base + pos * es;
    if (ist == 1) {
      std::memcpy(dst, s, run * es);
    } else {
      for (int64_t r = 0; r < run; ++r) std::memcpy(dst + r * es, s + r * ist * es, es);
    }
    dst += run * es;
    i += run;
    idx[nd - 1] += run;
    pos += run * ist;
    if (idx[nd - 1] < inner) continue;
    pos -= ist * inner;
    idx[nd - 1] = 0;
    for (int d = nd - 2; d >= 0; --d) {  // odometer step over the outer dimensions
      pos += st[d];
      if (++idx[d] < shape[d]) break;
      pos -= st[d] * shape[d];
      idx[d] = 0;
    }
  }
}

Tensor chunk_of(const Tensor& buf, int64_t n) { return make_view(buf, {n}, {1}, buf.offset()); }

void fused_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  auto prog = program_for(a.str("program"), in.size());
  const Tensor& o = out[0];
  const Shape& shape = o.sizes();
  const int64_t n = o.numel();
  if (n == 0) return;
  FLOW_RUNTIME_CHECK(o.is_contiguous(), "_fused_elementwise: the output must be contiguous");
  // how each input reaches a chunk: as it is (0-dim), a view of its dense memory, or gathered
  enum Mode { kWhole, kDense, kGather };
  std::vector<Mode> mode(in.size());
  for (size_t k = 0; k < in.size(); ++k) {
    FLOW_RUNTIME_CHECK(in[k].device().type == DeviceType::CPU, "_fused_elementwise: CPU tensors only");
    if (in[k].dim() == 0) mode[k] = kWhole;
    else if (in[k].sizes() == shape && in[k].is_contiguous()) mode[k] = kDense;
    else mode[k] = kGather;
  }
  const Program& p = *prog;
  const int cpu = static_cast<int>(DeviceType::CPU);
  // threads share the chunks once the output is as large as the unfused ops would split (kParallelGrain
  // elements): a fused group must not run on one thread where its ops alone would run on all of them
  const int64_t kChunk = std::clamp<int64_t>(n / (4 * std::max(get_num_threads(), 1)), kMinChunk, kMaxChunk);
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  parallel_for(chunks, n >= kParallelGrain ? 1 : chunks, [&](int64_t cb, int64_t ce) {
    // registers: one chunk-sized buffer per gathered input and per intermediate result, reused over chunks
    std::vector<Tensor> gbuf(in.size()), rbuf(p.size());
    for (size_t k = 0; k < in.size(); ++k)
      if (mode[k] == kGather) gbuf[k] = empty({kChunk}, in[k].dtype(), o.device());
    for (size_t j = 0; j + 1 < p.size(); ++j) rbuf[j] = empty({kChunk}, p[j].dtype, o.device());
    std::vector<Tensor> ins(in.size()), res(p.size());
    for (int64_t c = cb; c < ce; ++c) {
      const int64_t b = c * kChunk, e = std::min(n, b + kChunk), m = e - b;
      for (size_t k = 0; k < in.size(); ++k) {
        if (mode[k] == kWhole) ins[k] = in[k];
        else if (mode[k] == kDense) ins[k] = make_view(in[k], {m}, {1}, in[k].offset() + b);
        else {
          gather(in[k], shape, b, e, static_cast<char*>(gbuf[k].raw_data()));
          ins[k] = chunk_of(gbuf[k], m);
        }
      }
      for (size_t j = 0; j < p.size(); ++j) {
        const Instr& ins_j = p[j];
        TensorList args;
        args.reserve(ins_j.refs.size());
        for (int r : ins_j.refs) args.push_back(r >= 0 ? ins[r] : res[-r - 1]);
        res[j] = j + 1 == p.size() ? make_view(o, {m}, {1}, o.offset() + b) : chunk_of(rbuf[j], m);
        ins_j.op->out_kernel[cpu](args, {res[j]}, ins_j.attrs);
      }
    }
  });
}

}  // namespace

FLOW_OP(_fused_elementwise)
    .schema("_fused_elementwise(Tensor[] inputs, str program, int[] shape, ScalarType dtype) -> Tensor")
    .traits(kElementwise | kBackwardHelper | kNonDifferentiable)
    .meta([](const TensorList& in, const Attrs& a) -> std::vector<TensorMeta> {
      program_for(a.str("program"), in.size());  // a bad program raises here, before any kernel runs
      FLOW_VALUE_CHECK(!in.empty(), "_fused_elementwise: expected at least one input");
      for (const Tensor& t : in)
        FLOW_RUNTIME_CHECK(t.dim() == 0 || t.dim() <= static_cast<int64_t>(a.ints("shape").size()),
                           "_fused_elementwise: an input does not broadcast to the output shape");
      return {{a.ints("shape"), a.dtype("dtype"), common_device(in, "_fused_elementwise")}};
    })
    .cpu_out(fused_kernel);

}  // namespace flow
