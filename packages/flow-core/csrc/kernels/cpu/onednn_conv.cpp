// float32 convolution through oneDNN. Our tensors are plain (ncw/nchw/ncdhw); the primitive picks its own
// (blocked) layouts, and reorders move data in and out. Primitive creation takes milliseconds, so each
// (direction, shapes, geometry) builds its primitive and reorders once and caches them.
#include <cstdlib>
#include <memory>
#include <mutex>
#include <new>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "conv.h"

namespace flow {
namespace {

using namespace dnnl;
using dt = memory::data_type;

engine& cpu_engine() {
  static engine e(engine::kind::cpu, 0);
  return e;
}

memory::format_tag plain_tag(size_t nd) {
  switch (nd) {
    case 3: return memory::format_tag::ncw;
    case 4: return memory::format_tag::nchw;
    default: return memory::format_tag::ncdhw;
  }
}
memory::format_tag weight_tag(size_t nd, bool grouped) {
  if (grouped) {
    switch (nd) {
      case 4: return memory::format_tag::goiw;
      case 5: return memory::format_tag::goihw;
      default: return memory::format_tag::goidhw;
    }
  }
  return plain_tag(nd);  // oiw/oihw/oidhw share the tags' layouts
}

struct Geometry {
  memory::dims src, wei, dst, stride, dil, pad_l, pad_r;
  bool grouped = false;
};

// src: input sizes (N, C, spatial...), dst: output sizes; weight (O, I/g, k...) split into groups.
Geometry geometry(const Shape& src, const Shape& wei, const Shape& dst, const ConvGeom& g) {
  Geometry r;
  r.src.assign(src.begin(), src.end());
  r.dst.assign(dst.begin(), dst.end());
  r.grouped = g.groups > 1;
  if (r.grouped) {
    r.wei.push_back(g.groups);
    r.wei.push_back(wei[0] / g.groups);
    r.wei.insert(r.wei.end(), wei.begin() + 1, wei.end());
  } else {
    r.wei.assign(wei.begin(), wei.end());
  }
  size_t ns = src.size() - 2;
  for (size_t i = 0; i < ns; ++i) {
    int64_t k = wei[2 + i];
    r.stride.push_back(g.stride[i]);
    r.dil.push_back(g.dilation[i] - 1);  // oneDNN counts the gaps
    r.pad_l.push_back(g.padding[i]);
    r.pad_r.push_back((dst[2 + i] - 1) * g.stride[i] + (k - 1) * g.dilation[i] + 1 - src[2 + i] - g.padding[i]);
  }
  return r;
}

enum class Dir { Fwd, BwdData, BwdWeight };
enum class Fmt { Plain, Any, Nhwc };

// A primitive plus the reorders between our plain buffers and its chosen layouts (one per argument).
struct Cached {
  primitive prim;
  struct Arg {
    int id;
    memory::desc user, inner;
    std::optional<reorder> to_inner, to_user;  // input args use to_inner, the output arg to_user
  };
  std::vector<Arg> args;  // inputs first, then the output (last)
  std::string impl;       // oneDNN's implementation name (impl_info_str)
};

std::mutex g_mu;
std::unordered_map<std::string, std::shared_ptr<Cached>> g_cache;

std::string key_of(int kind, const Geometry& g, bool bias) {
  std::ostringstream os;
  os << kind << '|' << bias;
  for (auto* v : {&g.src, &g.wei, &g.dst, &g.stride, &g.dil, &g.pad_l, &g.pad_r}) {
    os << '|';
    for (auto x : *v) os << x << ',';
  }
  return os.str();
}

Cached::Arg make_arg(int id, const memory::desc& user, const memory::desc& inner, bool is_output) {
  Cached::Arg a{id, user, inner, std::nullopt, std::nullopt};
  if (user != inner) {
    engine& e = cpu_engine();
    if (is_output) a.to_user = reorder(reorder::primitive_desc(e, inner, e, user));
    else a.to_inner = reorder(reorder::primitive_desc(e, user, e, inner));
  }
  return a;
}

// The cache key leaves out the layout: act_fmt derives it from the same geometry.
// `build(fmt)` makes the primitive with activations in `fmt`; should that land on oneDNN's reference
// implementation (a layout the optimized kernels do not cover for this geometry, hundreds of times slower),
// the primitive is rebuilt with the layouts left to oneDNN, as before the per-shape choice existed.
template <typename Build>
std::shared_ptr<Cached> get_or_build(const std::string& key, Fmt fmt, Build&& build) {
  {
    std::lock_guard<std::mutex> l(g_mu);
    auto it = g_cache.find(key);
    if (it != g_cache.end()) return it->second;
  }
  std::shared_ptr<Cached> c = build(fmt);
  if (fmt != Fmt::Any && c->impl.find("ref") != std::string::npos) c = build(Fmt::Any);
  std::lock_guard<std::mutex> l(g_mu);
  if (g_cache.size() > 512) g_cache.clear();  // bound memory on shape-churning workloads
  g_cache.emplace(key, c);
  return c;
}

// Per-thread scratch for the blocked-layout copies, one slot per argument, grown on demand and reused:
// a fresh oneDNN allocation per call maps (and page-faults) tens of MB for large activations.
void* scratch(size_t slot, size_t bytes) {
  struct Buf {
    void* p = nullptr;
    size_t n = 0;
    Buf() = default;
    Buf(const Buf&) = delete;
    Buf& operator=(const Buf&) = delete;
    ~Buf() { std::free(p); }
  };
  constexpr size_t kSlots = 8;  // a primitive has at most 4 arguments
  thread_local Buf bufs[kSlots];
  if (slot >= kSlots) throw std::bad_alloc();
  Buf& b = bufs[slot];
  if (b.n < bytes) {
    std::free(b.p);
    b.p = nullptr, b.n = 0;
    size_t n = (bytes + 63) / 64 * 64;
    b.p = std::aligned_alloc(64, n);
    if (!b.p) throw std::bad_alloc();
    b.n = n;
  }
  return b.p;
}

// Run `c` on user buffers (aligned with c->args), reordering where layouts differ; the argument `prepacked`
// (a DNNL_ARG_* id, or -1) is given in the primitive's own layout already.
void execute(const Cached& c, const std::vector<void*>& bufs, int prepacked = -1) {
  engine& e = cpu_engine();
  stream s(e);
  std::unordered_map<int, memory> exec_args;
  std::vector<std::pair<const Cached::Arg*, std::pair<memory, memory>>> outs;
  for (size_t i = 0; i < c.args.size(); ++i) {
    const auto& a = c.args[i];
    memory user(a.id == prepacked ? a.inner : a.user, e, bufs[i]);
    if (a.to_inner && a.id != prepacked) {
      memory inner(a.inner, e, scratch(i, a.inner.get_size()));
      a.to_inner->execute(s, user, inner);
      exec_args.emplace(a.id, inner);
    } else if (a.to_user) {
      memory inner(a.inner, e, scratch(i, a.inner.get_size()));
      exec_args.emplace(a.id, inner);
      outs.push_back({&a, {inner, user}});
    } else {
      exec_args.emplace(a.id, user);
    }
  }
  c.prim.execute(s, exec_args);
  for (auto& [a, mems] : outs) a->to_user->execute(s, mems.first, mems.second);
  s.wait();
}

memory::desc any_md(const memory::dims& d) { return memory::desc(d, dt::f32, memory::format_tag::any); }
memory::desc plain_md(const memory::dims& d) { return memory::desc(d, dt::f32, plain_tag(d.size())); }
memory::desc wei_md(const Geometry& g) { return memory::desc(g.wei, dt::f32, weight_tag(g.wei.size(), g.grouped)); }

// The layout the primitive sees its activations (src/dst and their diffs) in, chosen per direction from the
// geometry by a fixed rule (measured on AVX2, ResNet-18 shapes at batch 32 and 1, 2 threads; ms per call):
// - few input channels per group (an image stem: 1-3 channels): plain nchw; blocked layouts gain nothing and the
//   reorders dominate ((64,1,28,28)x(32,1,3,3) fwd+bwd 0.72x -> 0.42x torch's time).
// - forward: nhwc (oneDNN's brgemm kernels: 64ch 32x32 14.8 -> 14.6, 256->512 8x8/2 7.3 -> 6.7 over the blocked
//   default; batch 1, 128ch 16x16: 0.71 -> 0.59), plain nchw for 1x1 kernels, where oneDNN's GEMM path reads
//   the weights as they are instead of reordering them on every call (1x1/2 64->128 32x32 3.8 -> 1.6), and
//   blocked on large images (64ch 56x56 at batch 64: 1.33-1.48x torch's speed in nhwc, 1.6x blocked). (Few
//   output positions in all, batch-1 inference of the late layers, do not get here: conv.cpp's im2col path.)
// - backward-data: nhwc (512ch 4x4 15.5 -> 13.6, 256ch 8x8 17.9 -> 15.8), plain for 1x1 kernels (4.6 -> 1.8),
//   blocked on large images (64ch 32x32: 14.0 vs 14.6 nhwc).
// - backward-weight: oneDNN's blocked kernel only pays off on large images (64ch 32x32: 19.8 vs 24.5 plain);
//   below 1024 output positions per image the plain GEMM path wins without any reorders (128ch 16x16 17.5 ->
//   16.8, 256ch 8x8 17.8 -> 16.6, 1x1/2 2.7 -> 1.7; the smallest images go to conv.cpp's im2col path).
// Grouped convolutions keep oneDNN's own choice (its nhwc/plain coverage of them is uneven).
Fmt act_fmt(const Geometry& g, Dir d) {
  int64_t groups = g.grouped ? g.wei[0] : 1;
  if (g.src[1] / groups < 8) return Fmt::Plain;
  if (groups > 1) return Fmt::Any;
  size_t first_k = g.wei.size() - (g.src.size() - 2);
  bool pointwise = true;
  for (size_t i = first_k; i < g.wei.size(); ++i) pointwise = pointwise && g.wei[i] == 1;
  int64_t out_pos = 1;  // output positions per image
  for (size_t i = 2; i < g.dst.size(); ++i) out_pos *= g.dst[i];
  switch (d) {
    case Dir::Fwd: return pointwise ? Fmt::Plain : out_pos >= 2048 ? Fmt::Any : Fmt::Nhwc;
    case Dir::BwdData: return pointwise ? Fmt::Plain : out_pos >= 1024 ? Fmt::Any : Fmt::Nhwc;
    default: return out_pos >= 1024 ? Fmt::Any : Fmt::Plain;
  }
}
memory::format_tag nhwc_tag(size_t nd) {
  switch (nd) {
    case 3: return memory::format_tag::nwc;
    case 4: return memory::format_tag::nhwc;
    default: return memory::format_tag::ndhwc;
  }
}
memory::desc act_md(Fmt f, const memory::dims& d) {
  switch (f) {
    case Fmt::Plain: return plain_md(d);
    case Fmt::Nhwc: return memory::desc(d, dt::f32, nhwc_tag(d.size()));
    default: return any_md(d);
  }
}

convolution_forward::primitive_desc fwd_pd(const Geometry& g, bool bias, prop_kind pk, Fmt f) {
  engine& e = cpu_engine();
  memory::desc bmd = bias ? memory::desc({g.dst[1]}, dt::f32, memory::format_tag::x) : memory::desc();
  return convolution_forward::primitive_desc(e, pk, algorithm::convolution_direct, act_md(f, g.src), any_md(g.wei), bmd,
                                             act_md(f, g.dst), g.stride, g.dil, g.pad_l, g.pad_r);
}

}  // namespace

namespace {

std::shared_ptr<Cached> forward_primitive(const Geometry& g, bool bias) {
  return get_or_build(key_of(0, g, bias), act_fmt(g, Dir::Fwd), [&](Fmt f) {
    auto pd = fwd_pd(g, bias, prop_kind::forward_inference, f);
    auto r = std::make_shared<Cached>();
    r->impl = pd.impl_info_str();
    r->prim = convolution_forward(pd);
    r->args.push_back(make_arg(DNNL_ARG_SRC, plain_md(g.src), pd.src_desc(), false));
    r->args.push_back(make_arg(DNNL_ARG_WEIGHTS, wei_md(g), pd.weights_desc(), false));
    if (bias) r->args.push_back(make_arg(DNNL_ARG_BIAS, pd.bias_desc(), pd.bias_desc(), false));
    r->args.push_back(make_arg(DNNL_ARG_DST, plain_md(g.dst), pd.dst_desc(), true));
    return r;
  });
}

const Cached::Arg& weight_arg(const Cached& c) { return c.args[1]; }  // forward: src, weights, [bias], dst

void run_forward(const Cached& c, const Tensor& x, void* w, const Tensor& b, const Tensor& y, int prepacked) {
  std::vector<void*> bufs{x.raw_data(), w};
  if (b.defined()) bufs.push_back(b.raw_data());
  bufs.push_back(y.raw_data());
  execute(c, bufs, prepacked);
}

}  // namespace

void onednn_conv_forward(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y, const ConvGeom& cg) {
  auto c = forward_primitive(geometry(x.sizes(), w.sizes(), y.sizes(), cg), b.defined());
  run_forward(*c, x, w.raw_data(), b, y, -1);
}

int64_t onednn_conv_packed_weight_bytes(const Shape& x, const Shape& w, const Shape& y, const ConvGeom& cg, bool bias) {
  auto c = forward_primitive(geometry(x, w, y, cg), bias);
  const auto& a = weight_arg(*c);
  return a.to_inner ? static_cast<int64_t>(a.inner.get_size()) : 0;
}

void onednn_conv_pack_weight(const Tensor& w, const Shape& x, const Shape& y, const ConvGeom& cg, bool bias,
                             const Tensor& packed) {
  auto c = forward_primitive(geometry(x, w.sizes(), y, cg), bias);
  const auto& a = weight_arg(*c);
  FLOW_RUNTIME_CHECK(a.to_inner && packed.numel() * 4 == static_cast<int64_t>(a.inner.get_size()),
                     "convolution_pack_weight: the packed buffer has ", packed.numel(), " floats, the layout needs ",
                     a.inner.get_size() / 4);
  engine& e = cpu_engine();
  stream s(e);
  memory user(a.user, e, w.raw_data()), inner(a.inner, e, packed.raw_data());
  a.to_inner->execute(s, user, inner);
  s.wait();
}

void onednn_conv_forward_packed(const Tensor& x, const Tensor& packed, const Shape& w_sizes, const Tensor& b,
                                const Tensor& y, const ConvGeom& cg) {
  auto c = forward_primitive(geometry(x.sizes(), w_sizes, y.sizes(), cg), b.defined());
  const auto& a = weight_arg(*c);
  FLOW_RUNTIME_CHECK(a.to_inner && packed.numel() * 4 == static_cast<int64_t>(a.inner.get_size()),
                     "convolution_forward_packed: the packed weight has ", packed.numel(),
                     " floats, this geometry's layout needs ", a.inner.get_size() / 4,
                     " (pack it with convolution_pack_weight for the same shapes)");
  run_forward(*c, x, packed.raw_data(), b, y, DNNL_ARG_WEIGHTS);
}

void onednn_conv_backward_data(const Tensor& gy, const Tensor& w, const Tensor& gx, const ConvGeom& cg) {
  Geometry g = geometry(gx.sizes(), w.sizes(), gy.sizes(), cg);
  auto c = get_or_build(key_of(1, g, false), act_fmt(g, Dir::BwdData), [&](Fmt f) {
    engine& e = cpu_engine();
    auto hint = fwd_pd(g, false, prop_kind::forward_training, f);
    auto pd =
        convolution_backward_data::primitive_desc(e, algorithm::convolution_direct, act_md(f, g.src), any_md(g.wei),
                                                  act_md(f, g.dst), g.stride, g.dil, g.pad_l, g.pad_r, hint);
    auto r = std::make_shared<Cached>();
    r->impl = pd.impl_info_str();
    r->prim = convolution_backward_data(pd);
    r->args.push_back(make_arg(DNNL_ARG_DIFF_DST, plain_md(g.dst), pd.diff_dst_desc(), false));
    r->args.push_back(make_arg(DNNL_ARG_WEIGHTS, wei_md(g), pd.weights_desc(), false));
    r->args.push_back(make_arg(DNNL_ARG_DIFF_SRC, plain_md(g.src), pd.diff_src_desc(), true));
    return r;
  });
  execute(*c, {gy.raw_data(), w.raw_data(), gx.raw_data()});
}

void onednn_conv_backward_weight(const Tensor& gy, const Tensor& x, const Tensor& gw, const ConvGeom& cg) {
  Geometry g = geometry(x.sizes(), gw.sizes(), gy.sizes(), cg);
  auto c = get_or_build(key_of(2, g, false), act_fmt(g, Dir::BwdWeight), [&](Fmt f) {
    engine& e = cpu_engine();
    auto hint = fwd_pd(g, false, prop_kind::forward_training, f);
    auto pd =
        convolution_backward_weights::primitive_desc(e, algorithm::convolution_direct, act_md(f, g.src), any_md(g.wei),
                                                     act_md(f, g.dst), g.stride, g.dil, g.pad_l, g.pad_r, hint);
    auto r = std::make_shared<Cached>();
    r->impl = pd.impl_info_str();
    r->prim = convolution_backward_weights(pd);
    r->args.push_back(make_arg(DNNL_ARG_DIFF_DST, plain_md(g.dst), pd.diff_dst_desc(), false));
    r->args.push_back(make_arg(DNNL_ARG_SRC, plain_md(g.src), pd.src_desc(), false));
    r->args.push_back(make_arg(DNNL_ARG_DIFF_WEIGHTS, wei_md(g), pd.diff_weights_desc(), true));
    return r;
  });
  execute(*c, {gy.raw_data(), x.raw_data(), gw.raw_data()});
}

}  // namespace flow
