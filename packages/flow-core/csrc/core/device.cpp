#include "device.h"

#include <cstdlib>

namespace flow {

std::string Device::str() const {
  std::string s = type == DeviceType::CPU ? "cpu" : type == DeviceType::CUDA ? "cuda" : "meta";
  if (index >= 0) s += ":" + std::to_string(index);
  return s;
}

Device parse_device(const std::string& s) {
  std::string kind = s;
  int index = -1;
  auto colon = s.find(':');
  if (colon != std::string::npos) {
    kind = s.substr(0, colon);
    std::string idx = s.substr(colon + 1);
    char* end = nullptr;
    long v = std::strtol(idx.c_str(), &end, 10);
    FLOW_RUNTIME_CHECK(!idx.empty() && *end == '\0' && v >= 0, "Invalid device string: '", s, "'");
    index = static_cast<int>(v);
  }
  if (kind == "cpu") return {DeviceType::CPU, index < 0 ? -1 : index};
  if (kind == "cuda") return {DeviceType::CUDA, index};
  if (kind == "meta") return {DeviceType::Meta, index};
  fail(ErrorKind::Runtime, "Expected one of cpu, cuda, meta device type at start of device string: ", s);
}

bool cuda_is_built() {
#ifdef FLOW_WITH_CUDA
  return true;
#else
  return false;
#endif
}

void check_device_available(const Device& d) {
  if (d.type == DeviceType::CUDA && !cuda_is_built())
    fail(ErrorKind::Runtime,
         "oneflow was built without CUDA support: device 'cuda' is not available (rebuild flow-core with "
         "-DFLOW_WITH_CUDA=ON)");
}

}  // namespace flow
