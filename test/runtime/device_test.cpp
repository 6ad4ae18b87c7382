#include <metaguard/metaguard.h>

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <thread>

namespace {
namespace device_test {

// Every test starts and ends with no default device.
class DeviceTest : public ::testing::Test {
protected:
  void SetUp() override { metaguard::reset_default_device(); }
  void TearDown() override { metaguard::reset_default_device(); }
};

TEST_F(DeviceTest, NothingSetMeansNoAmbientDevice) {
  EXPECT_FALSE(metaguard::ambient_device().has_value());
  EXPECT_FALSE(metaguard::meta_device_active());
  EXPECT_EQ(metaguard::tensor_options().device(), torch::Device(torch::kCPU));
}

TEST_F(DeviceTest, SetDefaultDeviceAcceptsEveryArgumentKind) {
  metaguard::set_default_device(torch::Device(torch::kMeta));
  EXPECT_TRUE(metaguard::meta_device_active());
  metaguard::set_default_device(torch::kCPU);
  EXPECT_EQ(*metaguard::ambient_device(), torch::Device(torch::kCPU));
  metaguard::set_default_device("meta");
  EXPECT_TRUE(metaguard::meta_device_active());
  metaguard::set_default_device(std::string("cpu"));
  EXPECT_FALSE(metaguard::meta_device_active());
  metaguard::set_default_device(std::string_view("meta"));
  EXPECT_TRUE(metaguard::meta_device_active());
  metaguard::set_default_device(c10::DeviceType::CPU);
  EXPECT_FALSE(metaguard::meta_device_active());
  const char *name = "cuda:1";
  metaguard::set_default_device(name);
  EXPECT_EQ(*metaguard::ambient_device(), torch::Device(torch::kCUDA, 1));
}

TEST_F(DeviceTest, BadDeviceStringNamesIt) {
  try {
    metaguard::set_default_device("gpu0");
    FAIL() << "expected metaguard::Error";
  } catch (const metaguard::Error &e) {
    EXPECT_NE(std::string(e.what()).find("'gpu0'"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(metaguard::ambient_device().has_value()) << "a failed set changes nothing";
}

TEST_F(DeviceTest, ScopesNestAndRestore) {
  metaguard::set_default_device("cpu");
  {
    metaguard::MetaDeviceScope meta;
    EXPECT_TRUE(metaguard::meta_device_active());
    {
      metaguard::DeviceScope cpu(torch::Device(torch::kCPU));
      EXPECT_FALSE(metaguard::meta_device_active());
      EXPECT_EQ(metaguard::tensor_options().device(), torch::Device(torch::kCPU));
    }
    EXPECT_TRUE(metaguard::meta_device_active());
    EXPECT_EQ(metaguard::tensor_options().device(), torch::Device(torch::kMeta));
  }
  EXPECT_EQ(*metaguard::ambient_device(), torch::Device(torch::kCPU));
}

TEST_F(DeviceTest, ScopeWinsOverDefaultDevice) {
  metaguard::set_default_device("meta");
  metaguard::DeviceScope cpu(torch::Device(torch::kCPU));
  EXPECT_FALSE(metaguard::meta_device_active());
}

TEST_F(DeviceTest, ExceptionsUnwindScopes) {
  try {
    metaguard::MetaDeviceScope outer;
    metaguard::DeviceScope inner(torch::Device(torch::kMeta));
    throw std::runtime_error("boom");
  } catch (const std::runtime_error &) {
  }
  EXPECT_FALSE(metaguard::ambient_device().has_value());
  EXPECT_THROW(metaguard::with_meta_device([]() -> int { throw std::logic_error("x"); }),
               std::logic_error);
  EXPECT_FALSE(metaguard::meta_device_active());
}

TEST_F(DeviceTest, InitEmptyWeightsKeepsBuffersRealByDefault) {
  {
    auto guard = metaguard::init_empty_weights();
    EXPECT_TRUE(metaguard::meta_device_active());
    EXPECT_FALSE(metaguard::ambient_includes_buffers());
  }
  {
    auto guard = metaguard::init_empty_weights(/*include_buffers=*/true);
    EXPECT_TRUE(metaguard::ambient_includes_buffers());
  }
  EXPECT_TRUE(metaguard::ambient_includes_buffers());
  EXPECT_FALSE(metaguard::meta_device_active());
}

TEST_F(DeviceTest, WithMetaDeviceReturnsTheResultAndAllocatesNothing) {
  auto t = metaguard::with_meta_device(
      [] { return torch::empty({1024, 1024}, metaguard::tensor_options()); });
  EXPECT_TRUE(t.is_meta());
  EXPECT_EQ(t.numel(), 1024 * 1024);
  int value = 0;
  int &ref = metaguard::with_meta_device([&]() -> int & { return value; });
  EXPECT_EQ(&ref, &value) << "decltype(auto) keeps references";
}

TEST_F(DeviceTest, ScopesArePerThreadDefaultIsPerProcess) {
  metaguard::MetaDeviceScope meta;
  bool other_thread_meta = true;
  std::thread([&] { other_thread_meta = metaguard::meta_device_active(); }).join();
  EXPECT_FALSE(other_thread_meta) << "a scope on this thread must not leak";

  metaguard::set_default_device("meta");
  bool other_thread_sees_default = false;
  std::thread([&] { other_thread_sees_default = metaguard::meta_device_active(); }).join();
  EXPECT_TRUE(other_thread_sees_default);
}

} // namespace device_test
} // namespace
