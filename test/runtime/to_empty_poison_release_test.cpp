// The memory to_empty gives, in a release build: no mark and no check, but
// every tensor it allocates holds poison, so a model used before it is
// initialised computes NaNs (floating types) or sentinels (integer and bool
// types), never the bytes the allocator had.
//
// This file is a release translation unit whatever the build type: the
// checks follow the program's translation units (debug_checks.h).
#ifndef NDEBUG
#define NDEBUG
#endif
#include "empty_model_net.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>

namespace {
namespace to_empty_poison_release_test {

using empty_test::Net;

class ToEmptyPoisonReleaseTest : public testing::Test {
protected:
  void SetUp() override {
    if (metaguard::empty_model_checks())
      GTEST_SKIP() << "libmetaguard itself was built without NDEBUG";
  }
};

template <class U> U bits_at(const torch::Tensor &tensor, std::int64_t i) {
  U value;
  std::memcpy(&value, static_cast<const char *>(tensor.data_ptr()) + i * tensor.element_size(), sizeof(U));
  return value;
}

TEST_F(ToEmptyPoisonReleaseTest, TheSnippetComputesNaNsNotStaleMemory) {
  Net net{nullptr};
  {
    auto guard = metaguard::init_empty_weights();
    net = metaguard::from_config<Net>(empty_test::net_config());
  }
  metaguard::to_empty(*net, torch::kCPU);
  for (const auto &item : net->named_parameters())
    for (std::int64_t i = 0; i < item.value().numel(); ++i)
      ASSERT_EQ(bits_at<std::uint32_t>(item.value(), i), 0x7FC0DEADu) << item.key() << " " << i;
  const torch::Tensor out = empty_test::forward(net);
  EXPECT_TRUE(torch::isnan(out).all().item<bool>());
}

struct AllTypesImpl : torch::nn::Module {
  AllTypesImpl() {
    for (const auto type : {torch::kFloat, torch::kDouble, torch::kHalf, torch::kBFloat16, torch::kComplexFloat,
                            torch::kComplexDouble, torch::kChar, torch::kShort, torch::kInt, torch::kLong,
                            torch::kByte, torch::kBool})
      register_buffer(std::string(c10::toString(type)), torch::empty({5}, torch::TensorOptions(type)));
  }
};
TORCH_MODULE(AllTypes);

TEST_F(ToEmptyPoisonReleaseTest, EveryDtypeGetsItsDocumentedPoison) {
  AllTypes all{nullptr};
  {
    metaguard::MetaDeviceScope scope;
    all = AllTypes();
  }
  metaguard::to_empty(*all, torch::kCPU);
  auto buffers = all->named_buffers();
  auto expect_all = [&](const char *name, auto bits) {
    using U = decltype(bits);
    const torch::Tensor &tensor = buffers[name];
    const std::int64_t units = tensor.numel() * tensor.element_size() / static_cast<std::int64_t>(sizeof(U));
    for (std::int64_t i = 0; i < units; ++i) {
      U value;
      std::memcpy(&value, static_cast<const char *>(tensor.data_ptr()) + i * sizeof(U), sizeof(U));
      EXPECT_EQ(value, bits) << name << " " << i;
    }
  };
  expect_all("Float", std::uint32_t{0x7FC0DEAD});
  expect_all("Double", std::uint64_t{0x7FF800000000DEAD});
  expect_all("Half", std::uint16_t{0x7EAD});
  expect_all("BFloat16", std::uint16_t{0x7FED});
  expect_all("ComplexFloat", std::uint32_t{0x7FC0DEAD});
  expect_all("ComplexDouble", std::uint64_t{0x7FF800000000DEAD});
  expect_all("Char", std::uint8_t{0x80});
  expect_all("Short", std::uint16_t{0x8000});
  expect_all("Int", std::uint32_t{0x80000000});
  expect_all("Long", std::uint64_t{0x8000000000000000});
  expect_all("Byte", std::uint8_t{0xFF});
  expect_all("Bool", std::uint8_t{0x01});
  EXPECT_TRUE(torch::isnan(buffers["Float"]).all().item<bool>());
  EXPECT_TRUE(torch::isnan(buffers["Half"].to(torch::kFloat)).all().item<bool>());
  EXPECT_TRUE(torch::isnan(buffers["BFloat16"].to(torch::kFloat)).all().item<bool>());
  EXPECT_TRUE((buffers["Long"] == std::numeric_limits<std::int64_t>::min()).all().item<bool>());
}

TEST_F(ToEmptyPoisonReleaseTest, TheNaNPayloadSurvivesArithmetic) {
  torch::nn::Linear layer{nullptr};
  {
    auto guard = metaguard::init_empty_weights();
    layer = torch::nn::Linear(4, 3);
  }
  metaguard::to_empty(*layer, torch::kCPU);
  const torch::Tensor doubled = layer->bias * 2;
  EXPECT_EQ(bits_at<std::uint32_t>(doubled, 0), 0x7FC0DEADu);
}

} // namespace to_empty_poison_release_test
} // namespace
