// Error types that cross into Python as the matching builtin exception.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace flow {

enum class ErrorKind { Runtime, Type, Value, Index, NotImplemented };

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, std::string msg) : std::runtime_error(std::move(msg)), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

namespace detail {
inline void cat_to(std::ostringstream&) {}
template <typename T, typename... Rest>
void cat_to(std::ostringstream& os, const T& v, const Rest&... rest) {
  os << v;
  cat_to(os, rest...);
}
}  // namespace detail

template <typename... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream os;
  detail::cat_to(os, args...);
  return os.str();
}

template <typename... Args>
[[noreturn]] void fail(ErrorKind kind, const Args&... args) {
  throw Error(kind, str_cat(args...));
}

}  // namespace flow

// FLOW_CHECK(cond, kind, msg...) raises a Python exception of `kind` when `cond` is false.
#define FLOW_CHECK(cond, kind, ...)                                  \
  do {                                                               \
    if (!(cond)) ::flow::fail(::flow::ErrorKind::kind, __VA_ARGS__); \
  } while (0)
#define FLOW_RUNTIME_CHECK(cond, ...) FLOW_CHECK(cond, Runtime, __VA_ARGS__)
#define FLOW_TYPE_CHECK(cond, ...) FLOW_CHECK(cond, Type, __VA_ARGS__)
#define FLOW_VALUE_CHECK(cond, ...) FLOW_CHECK(cond, Value, __VA_ARGS__)
#define FLOW_INDEX_CHECK(cond, ...) FLOW_CHECK(cond, Index, __VA_ARGS__)
