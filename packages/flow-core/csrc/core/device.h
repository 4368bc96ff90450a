// Where a tensor's memory lives. CUDA is recognised so that "cuda" strings parse and fail clearly.
#pragma once
#include <string>

#include "error.h"

namespace flow {

enum class DeviceType : int8_t { CPU, CUDA, Meta };

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = -1;
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
  bool is_cpu() const { return type == DeviceType::CPU; }
  std::string str() const;
};

Device parse_device(const std::string& s);
bool cuda_is_built();
// Raises when a tensor is asked for on a device this build cannot serve.
void check_device_available(const Device& d);

}  // namespace flow
