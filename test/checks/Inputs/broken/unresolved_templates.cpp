// Templates with dependent and unresolvable calls, some instantiated with
// types that make them ill-formed.
#include <metaguard/metaguard.h>

namespace fs = std::filesystem;

template <class M, class Options> auto load(const fs::path &p, Options o) {
  auto guard = metaguard::init_empty_weights();
  auto m = M::from_pretrained(p, o.device_map);
  metaguard::dispatch_model(*m, o.map());
  m->to(o.device);
  metaguard::remove_hook_from_module(*m.ptr());
  return metaguard::save_pretrained(*m, p);
}

template <class T> void never_instantiated(T t) {
  metaguard::with_meta_device([&] { return t.template load<T>(); });
  typename T::Guard g;
  from_pretrained<T>(t.path());
}

struct NotAModel {};
struct NoOptions {};

void use(const fs::path &p) {
  load<NotAModel>(p, NoOptions{});
  load<int>(p, 3);
}
