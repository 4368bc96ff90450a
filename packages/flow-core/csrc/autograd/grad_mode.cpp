#include "grad_mode.h"

namespace flow::autograd {

static thread_local bool t_grad_enabled = true;
static thread_local bool t_inference = false;

bool GradMode::is_enabled() { return t_grad_enabled; }
void GradMode::set_enabled(bool on) { t_grad_enabled = on; }
bool InferenceMode::is_enabled() { return t_inference; }
void InferenceMode::set_enabled(bool on) { t_inference = on; }

}  // namespace flow::autograd
