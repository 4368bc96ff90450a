// Thread-local autograd switches: grad mode (no_grad/enable_grad) and inference mode.
#pragma once

namespace flow::autograd {

struct GradMode {
  static bool is_enabled();
  static void set_enabled(bool on);
};
struct InferenceMode {
  static bool is_enabled();
  static void set_enabled(bool on);
};
// Anomaly detection (process-wide, as in PyTorch): backward checks every node's gradients for NaN.
struct AnomalyMode {
  static bool is_enabled();
  static bool check_nan();
  static void set_enabled(bool on, bool check_nan);
};

class AutoGradMode {
 public:
  explicit AutoGradMode(bool on) : prev_(GradMode::is_enabled()) { GradMode::set_enabled(on); }
  ~AutoGradMode() { GradMode::set_enabled(prev_); }
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  bool prev_;
};

}  // namespace flow::autograd
