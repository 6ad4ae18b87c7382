// Fuzz target: the strings of device maps and max_memory. Each input line is
// tried as a size ("5GB"), a placement ("disk", "cuda:1") and a device name,
// and the lines build a device map and a MaxMemory.
#include "fuzz_util.h"

#include <metaguard/device.h>
#include <metaguard/device_map.h>
#include <metaguard/size.h>

using namespace metaguard_fuzz;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  std::string_view input = as_text(data, size);
  metaguard::DeviceMap map;
  metaguard::MaxMemory memory;
  std::string previous;
  while (true) {
    const std::size_t newline = input.find('\n');
    const std::string line(input.substr(0, newline));
    expect_typed_errors([&] {
      const std::int64_t bytes = metaguard::parse_size(line);
      if (bytes < 0)
        violated("parse_size returned a negative size");
      memory.set(previous, metaguard::Size(line));
    });
    expect_typed_errors([&] {
      const metaguard::Placement placement(line);
      if (metaguard::Placement(placement.str()) != placement)
        violated("a placement does not survive str() and parsing back");
      map.set(previous, placement);
    });
    expect_typed_errors([&] { (void)metaguard::parse_device(line); });
    expect_typed_errors([&] { (void)map.placement_for(line); });
    previous = line;
    if (newline == std::string_view::npos)
      break;
    input.remove_prefix(newline + 1);
  }
  return 0;
}
