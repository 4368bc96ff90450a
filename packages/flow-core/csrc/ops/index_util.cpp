#include "index_util.h"

#include <cmath>

namespace flow::idx {

namespace {
template <typename F>
void dispatch_bytes(int64_t itemsize, F&& f) {
  switch (itemsize) {
    case 1: return f(TypeTag<uint8_t>{});
    case 2: return f(TypeTag<uint16_t>{});
    case 4: return f(TypeTag<uint32_t>{});
    case 8: return f(TypeTag<uint64_t>{});
  }
  fail(ErrorKind::Runtime, "index kernel: unsupported item size ", itemsize);
}

template <typename T>
bool isnan_v(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  else return false;
}
}  // namespace

bool check_range(const Tensor& ix, int64_t size, int64_t dim, ErrorKind kind, const char* custom_msg) {
  Tensor c = ops::contiguous(to_long(ix));
  const int64_t* p = c.data<int64_t>();
  int64_t n = c.numel();
  bool neg = false;
  for (int64_t i = 0; i < n; ++i) {
    int64_t v = p[i];
    if (v < -size || v >= size) {
      if (custom_msg) fail(kind, custom_msg);
      fail(kind, "index ", v, " is out of bounds for dimension ", dim, " with size ", size);
    }
    neg |= v < 0;
  }
  return neg;
}

Tensor wrapped_index(const Tensor& ix, int64_t size, int64_t dim, ErrorKind kind, const char* custom_msg) {
  Tensor c = ops::contiguous(to_long(ix));
  if (!check_range(c, size, dim, kind, custom_msg)) return c;
  Tensor w = empty(c.sizes(), DType::Int64, c.device());
  const int64_t* p = c.data<int64_t>();
  int64_t* q = w.data<int64_t>();
  for (int64_t i = 0, n = c.numel(); i < n; ++i) q[i] = p[i] < 0 ? p[i] + size : p[i];
  return w;
}

void offset_gather(const Tensor& dst, const Tensor& src_r, const Tensor& off_r, int64_t stride) {
  if (dst.numel() == 0) return;
  dispatch_bytes(dst.itemsize(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t sb = stride * static_cast<int64_t>(sizeof(T));
    for_each_element<3>({&dst, &src_r, &off_r}, dst.sizes(),
                        [sb](std::array<char*, 3> p, std::array<int64_t, 3> s, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        int64_t o = *reinterpret_cast<const int64_t*>(p[2] + i * s[2]);
        *reinterpret_cast<T*>(p[0] + i * s[0]) = *reinterpret_cast<const T*>(p[1] + i * s[1] + o * sb);
      }
    });
  });
}

void offset_scatter(const Tensor& dst_r, const Tensor& src_r, const Tensor& off_r, int64_t stride, Reduce r,
                    const Shape& sizes) {
  if (shape_numel(sizes) == 0) return;
  if (r == Reduce::Assign) {
    dispatch_bytes(dst_r.itemsize(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const int64_t sb = stride * static_cast<int64_t>(sizeof(T));
      for_each_element<3>({&dst_r, &src_r, &off_r}, sizes,
                          [sb](std::array<char*, 3> p, std::array<int64_t, 3> s, int64_t n) {
        for (int64_t i = 0; i < n; ++i) {
          int64_t o = *reinterpret_cast<const int64_t*>(p[2] + i * s[2]);
          *reinterpret_cast<T*>(p[0] + i * s[0] + o * sb) = *reinterpret_cast<const T*>(p[1] + i * s[1]);
        }
      });
    });
    return;
  }
  // Reductions: several elements may hit one target, so run on one thread (grain = everything).
  dispatch_all(dst_r.dtype(), "scatter", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = acc_t<T>;
    const int64_t sb = stride * static_cast<int64_t>(sizeof(T));
    for_each_element<3>({&dst_r, &src_r, &off_r}, sizes,
                        [sb, r](std::array<char*, 3> p, std::array<int64_t, 3> s, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        int64_t o = *reinterpret_cast<const int64_t*>(p[2] + i * s[2]);
        T* d = reinterpret_cast<T*>(p[0] + i * s[0] + o * sb);
        A v = static_cast<A>(*reinterpret_cast<const T*>(p[1] + i * s[1]));
        A cur = static_cast<A>(*d);
        if constexpr (std::is_same_v<T, bool>) {
          if (r == Reduce::Add || r == Reduce::Mean || r == Reduce::Max) *d = cur || v;
          else *d = cur && v;
        } else {
          switch (r) {
            case Reduce::Add:
            case Reduce::Mean: *d = static_cast<T>(cur + v); break;
            case Reduce::Mul: *d = static_cast<T>(cur * v); break;
            case Reduce::Max: if (isnan_v(v) || v > cur) *d = static_cast<T>(v); break;
            case Reduce::Min: if (isnan_v(v) || v < cur) *d = static_cast<T>(v); break;
            default: break;
          }
        }
      }
    }, std::numeric_limits<int64_t>::max());
  });
}

Reduce parse_reduce(const std::string& s, bool scatter_reduce) {
  if (scatter_reduce) {
    if (s == "sum") return Reduce::Add;
    if (s == "prod") return Reduce::Mul;
    if (s == "mean") return Reduce::Mean;
    if (s == "amax") return Reduce::Max;
    if (s == "amin") return Reduce::Min;
    fail(ErrorKind::Runtime, "reduce argument must be either sum, prod, mean, amax or amin, got ", s);
  }
  if (s == "add") return Reduce::Add;
  if (s == "multiply") return Reduce::Mul;
  fail(ErrorKind::Runtime, "reduce argument must be either add or multiply.");
}

}  // namespace flow::idx
