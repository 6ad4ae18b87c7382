// Incomplete and undeclared types where the checks expect models, guards and
// options.
#include <metaguard/metaguard.h>

namespace fs = std::filesystem;
struct Incomplete;
struct GuardOfIncomplete : metaguard::MetaDeviceScope {
  Incomplete member;
};
struct DerivedFromIncomplete : Incomplete {};

void scope(const fs::path &p, Incomplete &i) {
  GuardOfIncomplete guard;
  auto m = metaguard::from_pretrained<Incomplete>(p);
  metaguard::LoadOptions options;
  options.device_map = i;
  metaguard::from_pretrained<UndeclaredModel>(p, options);
}

void offload(const fs::path &p, Incomplete &m, DerivedFromIncomplete &d) {
  metaguard::dispatch_model(m, metaguard::DeviceMap::on("disk"));
  metaguard::remove_hook_from_module(d);
  metaguard::save_pretrained(m, p);
  m.to(torch::kCUDA);
}
