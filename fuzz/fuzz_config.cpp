// Fuzz target: config.json loading.
#include "fuzz_util.h"

#include <metaguard/config.h>

using namespace metaguard_fuzz;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const auto dir = scratch() / "config";
  std::filesystem::create_directories(dir);
  write_file(dir / "config.json", as_text(data, size));
  expect_typed_errors([&] {
    const metaguard::Config config = metaguard::load_config(dir);
    if (!config.is_object())
      violated("load_config returned something other than a JSON object");
  });
  return 0;
}
