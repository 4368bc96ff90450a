#include "grad_mode.h"

#include <atomic>

namespace flow::autograd {

static thread_local bool t_grad_enabled = true;
static thread_local bool t_inference = false;

bool GradMode::is_enabled() { return t_grad_enabled; }
void GradMode::set_enabled(bool on) { t_grad_enabled = on; }
bool InferenceMode::is_enabled() { return t_inference; }
void InferenceMode::set_enabled(bool on) { t_inference = on; }

static std::atomic<bool> g_anomaly{false}, g_anomaly_nan{true};
bool AnomalyMode::is_enabled() { return g_anomaly.load(std::memory_order_relaxed); }
bool AnomalyMode::check_nan() { return g_anomaly_nan.load(std::memory_order_relaxed); }
void AnomalyMode::set_enabled(bool on, bool check_nan) {
  g_anomaly = on;
  g_anomaly_nan = check_nan;
}

}  // namespace flow::autograd
