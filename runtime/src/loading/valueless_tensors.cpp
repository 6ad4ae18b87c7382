#include "loading/valueless_tensors.h"

#include "loading/computed_buffers.h"
#include "devices/uninitialised.h"

#include <sstream>

namespace metaguard::detail {
namespace {

std::string names_of(const std::vector<Valueless> &tensors) {
  std::string text;
  for (const auto &t : tensors)
    text += (text.empty() ? "" : ", ") + t.name;
  return text;
}

// "'rotary.inv_freq' (Float [4], on meta)"
std::string described(const Valueless &t) {
  std::ostringstream text;
  text << "'" << t.name << "' (" << t.tensor.scalar_type() << " " << t.tensor.sizes() << ", "
       << (t.meta ? "on meta" : "holding only to_empty's poison") << ")";
  return text.str();
}

void replace_in_place(const torch::Tensor &slot, const torch::Tensor &value) {
  slot.unsafeGetTensorImpl()->shallow_copy_from(value.getIntrusivePtr());
}

torch::Device device_for(const Valueless &t, const std::function<torch::Device(const Valueless &)> &device_of) {
  return t.meta ? device_of(t) : t.tensor.device();
}

} // namespace

bool has_no_values(const torch::Tensor &tensor) {
  if (!tensor.defined())
    return false;
  if (tensor.is_meta())
    return true;
  if (is_marked_uninitialised(tensor))
    return holds_only_poison(tensor);
  // Without a mark (release builds) a NaN with metaguard's payload is still
  // distinctive; an integer or bool sentinel is an ordinary value.
  return (tensor.is_floating_point() || tensor.is_complex()) && holds_only_poison(tensor);
}

ValuelessPlan plan_valueless(const std::vector<Valueless> &valueless) {
  ValuelessPlan plan;
  std::vector<std::pair<std::string, torch::Tensor>> buffers;
  for (const auto &t : valueless)
    if (!t.parameter)
      buffers.emplace_back(t.name, t.tensor);
  plan.constructed = constructed_values(buffers);
  for (const auto &t : valueless) {
    if (plan.constructed.count(t.name))
      plan.recomputed.push_back(t);
    else if (t.computed)
      plan.unrecoverable.push_back(t);
    else
      plan.zeroed.push_back(t);
  }
  return plan;
}

std::string describe_unrecoverable(const ValuelessPlan &plan, const std::string &where) {
  if (plan.unrecoverable.empty())
    return {};
  std::string listed;
  for (const auto &t : plan.unrecoverable)
    listed += (listed.empty() ? "" : ", ") + described(t);
  return where + " gives no values to non-persistent buffers, and nothing else has: " + listed +
         ". Checkpoints never hold such buffers: the model's constructor computes them, but this "
         "model was built with its buffers on the meta device (MetaDeviceScope, DeviceScope(meta), "
         "init_empty_weights(true), with_meta_device or set_default_device(\"meta\")), where they got "
         "no values (to_empty then gives them only poison), and metaguard does not know how to build "
         "it again. Build the empty model under init_empty_weights() (buffers keep the values their "
         "constructor computes) or with from_config<Model>(config), whose loads recompute them; or "
         "set these buffers yourself after loading.";
}

std::string describe_lenient(const ValuelessPlan &plan, const std::string &lenient) {
  std::string text = lenient;
  auto add = [&](const std::string &part) { text += (text.empty() ? "" : " ") + part; };
  std::vector<Valueless> meta, poison;
  for (const auto &t : plan.zeroed)
    (t.meta ? meta : poison).push_back(t);
  if (!meta.empty())
    add("Missing tensors that were on the meta device and are now zeros: " + names_of(meta) + ".");
  if (!poison.empty())
    add("Missing tensors that held only to_empty's poison (memory nothing initialised) and are now "
        "zeros: " + names_of(poison) + ".");
  std::vector<Valueless> missing_buffers;
  for (const auto &t : plan.recomputed)
    if (!t.computed)
      missing_buffers.push_back(t);
  if (!missing_buffers.empty())
    add("Missing buffers given the values their constructor computes: " + names_of(missing_buffers) + ".");
  return text;
}

void apply_valueless_plan(const ValuelessPlan &plan,
                          const std::function<torch::Device(const Valueless &)> &device_of) {
  torch::NoGradGuard no_grad;
  for (const auto &t : plan.recomputed) {
    const auto options = t.tensor.options().device(device_for(t, device_of));
    replace_in_place(t.tensor, plan.constructed.at(t.name).to(options, /*non_blocking=*/false,
                                                              /*copy=*/true));
  }
  for (const auto &t : plan.zeroed)
    replace_in_place(t.tensor, torch::zeros(t.tensor.sizes(),
                                            t.tensor.options().device(device_for(t, device_of))));
}

} // namespace metaguard::detail
