// A missing header stops the parse early.
#include <metaguard/metaguard.h>
#include <metaguard/no_such_header.h>

void f(const std::filesystem::path &p) {
  auto guard = metaguard::init_empty_weights();
  metaguard::from_pretrained<Model>(p);
}
