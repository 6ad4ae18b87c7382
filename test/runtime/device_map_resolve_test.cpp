// infer_auto_device_map and resolve_device_map against maps computed by hand
// with accelerate's algorithm (fill devices in order, keep room for the
// largest layer on main devices, split what does not fit unless it is a
// no-split class, merge children that share a placement).
#include "tiny_lm.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

namespace {
namespace device_map_resolve_test {

using metaguard::DeviceMap;
using metaguard::MaxMemory;

torch::nn::Linear square(std::int64_t n) { return torch::nn::Linear(torch::nn::LinearOptions(n, n).bias(false)); }

// 64-byte layers: linear1, block.a, block.b, linear2 (256 bytes in all).
struct SubImpl : torch::nn::Module {
  SubImpl() : a(register_module("a", square(4))), b(register_module("b", square(4))) {}
  torch::nn::Linear a, b;
};
TORCH_MODULE(Sub);

struct Net : torch::nn::Module {
  Net()
      : linear1(register_module("linear1", square(4))), block(register_module("block", Sub())),
        linear2(register_module("linear2", square(4))) {}
  torch::nn::Linear linear1;
  Sub block;
  torch::nn::Linear linear2;
};

std::map<std::string, std::string> as_strings(const DeviceMap &map) {
  EXPECT_TRUE(map.is_explicit());
  std::map<std::string, std::string> out;
  for (const auto &[prefix, placement] : map.entries())
    out[prefix] = placement.str();
  return out;
}

using Expected = std::map<std::string, std::string>;

TEST(InferAutoDeviceMapTest, AModelThatFitsGoesWholeOnTheCpu) {
  Net net;
  EXPECT_EQ(as_strings(metaguard::infer_auto_device_map(net, {{"cpu", 1000}}, {})), (Expected{{"", "cpu"}}));
}

TEST(InferAutoDeviceMapTest, SplitsAModuleThatDoesNotFit) {
  // cpu 200, 64 kept for the largest layer: linear1 and block.a fit (128),
  // block.b would make 192 > 136 and cannot be split: the rest goes to disk.
  Net net;
  EXPECT_EQ(as_strings(metaguard::infer_auto_device_map(net, {{"cpu", 200}}, {})),
            (Expected{{"linear1", "cpu"}, {"block.a", "cpu"}, {"block.b", "disk"}, {"linear2", "disk"}}));
}

TEST(InferAutoDeviceMapTest, NoSplitClassesStayWhole) {
  // "Sub" cannot be split: the largest layer is 128, leaving 72 on the cpu.
  Net net;
  const Expected expected{{"linear1", "cpu"}, {"block", "disk"}, {"linear2", "disk"}};
  for (const char *name : {"Sub", "SubImpl"})
    EXPECT_EQ(as_strings(metaguard::infer_auto_device_map(net, {{"cpu", 200}}, {name})), expected) << name;
  EXPECT_EQ(as_strings(metaguard::infer_auto_device_map(net, {{"cpu", 200}}, {net.block->name()})), expected);
}

TEST(InferAutoDeviceMapTest, GpusFillFirstThenCpuThenDisk) {
  Net net;
  const Expected expected{{"linear1", "cuda:0"}, {"block.a", "cuda:0"}, {"block.b", "cpu"}, {"linear2", "cpu"}};
  EXPECT_EQ(as_strings(metaguard::infer_auto_device_map(net, {{"cuda:0", 200}, {"cpu", 200}}, {})), expected);
  // accelerate's integer GPU keys.
  EXPECT_EQ(as_strings(metaguard::infer_auto_device_map(net, {{"cpu", 200}, {"0", 200}}, {})), expected);
}

TEST(InferAutoDeviceMapTest, EverythingToDiskWhenNothingFits) {
  Net net;
  EXPECT_EQ(as_strings(metaguard::infer_auto_device_map(net, {{"cpu", 10}}, {})), (Expected{{"", "disk"}}));
}

TEST(InferAutoDeviceMapTest, UnknownDeviceIsNamed) {
  Net net;
  try {
    metaguard::infer_auto_device_map(net, {{"tpu", 100}}, {});
    FAIL() << "expected Error";
  } catch (const metaguard::Error &e) {
    EXPECT_NE(std::string(e.what()).find("'tpu'"), std::string::npos) << e.what();
  }
}

TEST(InferAutoDeviceMapTest, TransformerBlocksWithNoSplitBlock) {
  // embed 3200 bytes, each block 9728, head 3400; the largest layer is a block.
  tiny::TinyLM model(50, 16, 4);
  const std::int64_t budget = 3200 + 2 * 9728 + 9728;
  EXPECT_EQ(as_strings(metaguard::infer_auto_device_map(model, {{"cpu", budget}}, {"Block"})),
            (Expected{{"embed", "cpu"},
                      {"blocks.0", "cpu"},
                      {"blocks.1", "cpu"},
                      {"blocks.2", "disk"},
                      {"blocks.3", "disk"},
                      {"head", "disk"}}));
}

// A module with no tensor (here a Dropout after the first 64-byte layer) is
// placed like any other, as accelerate places it (it was an out_of_range).
struct WithDropout : torch::nn::Module {
  WithDropout()
      : first(register_module("first", square(4))), drop(register_module("drop", torch::nn::Dropout(0.1))),
        mid(register_module("mid", square(4))), last(register_module("last", square(4))) {}
  torch::nn::Linear first;
  torch::nn::Dropout drop;
  torch::nn::Linear mid, last;
};

TEST(InferAutoDeviceMapTest, ModulesWithoutTensorsArePlaced) {
  WithDropout net;
  // cpu 150, 64 kept for the largest layer: first fits, the empty drop fits
  // with it, mid would make 128 > 86.
  EXPECT_EQ(as_strings(metaguard::infer_auto_device_map(net, {{"cpu", 150}}, {})),
            (Expected{{"first", "cpu"}, {"drop", "cpu"}, {"mid", "disk"}, {"last", "disk"}}));
}

// With an mps budget, the room for the largest layer is kept on mps (which
// shares the CPU's memory), not on the CPU, as accelerate does.
TEST(InferAutoDeviceMapTest, MpsIsTheOnlyMainDeviceWhenPresent) {
  Net net;
  // mps 150 - 64 kept: linear1 fits (64 <= 86), block.a would make 128.
  // cpu 100, nothing kept: block.a fits, block.b would make 128.
  EXPECT_EQ(as_strings(metaguard::infer_auto_device_map(net, {{"mps", 150}, {"cpu", 100}}, {})),
            (Expected{{"linear1", "mps"}, {"block.a", "cpu"}, {"block.b", "disk"}, {"linear2", "disk"}}));
}

TEST(ResolveDeviceMapTest, BalancedSpreadsOverGpus) {
  // get_balanced_memory: 256 / 2 GPUs + 1.25 x mean final layer (64) = 208 on
  // cuda:0 (the last GPU keeps its budget); 144 usable after the reserve.
  Net net;
  const MaxMemory mm{{"cuda:0", 1000}, {"cuda:1", 1000}};
  const Expected expected{{"linear1", "cuda:0"}, {"block.a", "cuda:0"}, {"block.b", "cuda:1"}, {"linear2", "cuda:1"}};
  EXPECT_EQ(as_strings(metaguard::resolve_device_map(net, DeviceMap::balanced(), mm)), expected);
  EXPECT_EQ(as_strings(metaguard::resolve_device_map(net, DeviceMap::automatic(), mm)), expected);
}

TEST(ResolveDeviceMapTest, BalancedLow0KeepsGpu0Empty) {
  Net net;
  const MaxMemory mm{{"cuda:0", 1000}, {"cuda:1", 1000}};
  EXPECT_EQ(as_strings(metaguard::resolve_device_map(net, DeviceMap::balanced_low_0(), mm)),
            (Expected{{"", "cuda:1"}}));
}

TEST(ResolveDeviceMapTest, SequentialFillsGpu0First) {
  Net net;
  const MaxMemory mm{{"cuda:0", 1000}, {"cuda:1", 1000}};
  EXPECT_EQ(as_strings(metaguard::resolve_device_map(net, DeviceMap::sequential(), mm)),
            (Expected{{"", "cuda:0"}}));
}

TEST(ResolveDeviceMapTest, StrategiesWithoutGpusAreTheSame) {
  Net net;
  const Expected expected{{"linear1", "cpu"}, {"block.a", "cpu"}, {"block.b", "disk"}, {"linear2", "disk"}};
  for (const auto &map : {DeviceMap::automatic(), DeviceMap::balanced(), DeviceMap::balanced_low_0(),
                          DeviceMap::sequential()})
    EXPECT_EQ(as_strings(metaguard::resolve_device_map(net, map, {{"cpu", 200}})), expected);
}

TEST(ResolveDeviceMapTest, WithoutBudgetUsesAvailableMemory) {
  Net net;
  EXPECT_EQ(as_strings(metaguard::resolve_device_map(net, DeviceMap::automatic())), (Expected{{"", "cpu"}}));
}

TEST(ResolveDeviceMapTest, ExplicitMapsAreCheckedForCoverage) {
  Net net;
  try {
    metaguard::resolve_device_map(net, {{"linear1", "cpu"}, {"block.a", "disk"}});
    FAIL() << "expected Error";
  } catch (const metaguard::Error &e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("2 tensor(s): block.b.weight, linear2.weight"), std::string::npos) << what;
    EXPECT_EQ(what.find("linear1.weight"), std::string::npos) << what;
  }
  const DeviceMap ok{{"", "cpu"}, {"block", "disk"}};
  EXPECT_EQ(as_strings(metaguard::resolve_device_map(net, ok)), as_strings(ok));
}

TEST(ResolveDeviceMapTest, InferredMapDispatchesAndRuns) {
  torch::manual_seed(11);
  tiny::TinyLM reference(50, 16, 4), model(50, 16, 4);
  tiny::copy_parameters(reference, model);
  const auto dir = std::filesystem::temp_directory_path() / ("metaguard_resolve_" + std::to_string(::getpid()));
  const auto map = metaguard::resolve_device_map(model, DeviceMap::automatic(), {{"cpu", 3200 + 3 * 9728}}, {"Block"});
  metaguard::dispatch_model(model, map, dir);
  EXPECT_EQ(metaguard::offloaded_parameter_names(model).size(), 2u * 8 + 2);
  torch::NoGradGuard no_grad;
  const auto ids = torch::randint(0, 50, {3, 4}, torch::kLong);
  EXPECT_TRUE(torch::equal(model.forward(ids), reference.forward(ids)));
  std::filesystem::remove_all(dir);
}

} // namespace device_map_resolve_test
} // namespace
