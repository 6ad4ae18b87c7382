// Syntax errors around the patterns the checks look for.
#include <metaguard/metaguard.h>

namespace fs = std::filesystem;
struct NetImpl : metaguard::PreTrainedModel {
  explicit NetImpl(const metaguard::Config &);
};
TORCH_MODULE(Net);

void scope(const fs::path &p) {
  auto guard = metaguard::init_empty_weights(;
  auto m = metaguard::from_pretrained<Net>(p, {.device_map = {{"", }});
  metaguard::set_default_device("meta"
  metaguard::with_meta_device([&] { return metaguard::from_pretrained<Net>(p) });
}

void offload(const fs::path &p, const metaguard::DeviceMap &map) {
  auto m = metaguard::from_pretrained<Net>(p, {.device_map = map};
  metaguard::remove_hook_from_module(*m, );
  m->to(torch::kCUDA
  metaguard::dispatch_model(*m, {{"", "disk"}, {"x"}});
}

void unterminated(const fs::path &p) {
  metaguard::MetaDeviceScope scope;
  if (true {
    metaguard::from_pretrained<Net>(p);
