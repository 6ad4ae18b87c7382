#include <metaguard/metaguard.h>

#include <gtest/gtest.h>

namespace {
namespace size_test {

TEST(SizeTest, UnitsFollowAccelerate) {
  EXPECT_EQ(metaguard::parse_size("1234"), 1234);
  EXPECT_EQ(metaguard::parse_size("1KiB"), 1024);
  EXPECT_EQ(metaguard::parse_size("2MiB"), 2 * 1024 * 1024);
  EXPECT_EQ(metaguard::parse_size("10GiB"), 10LL * 1024 * 1024 * 1024);
  EXPECT_EQ(metaguard::parse_size("1KB"), 1000);
  EXPECT_EQ(metaguard::parse_size("5GB"), 5000000000LL);
  EXPECT_EQ(metaguard::parse_size("5gb"), 5000000000LL);
  EXPECT_EQ(metaguard::parse_size(" 3 MB "), 3000000);
  EXPECT_EQ(metaguard::parse_size("1.5GB"), 1500000000LL);
}

TEST(SizeTest, BadStringsAreNamed) {
  for (const char *bad : {"", "GB", "5 parsecs", "1.2.3GB", "-5GB", "99999999999TB"}) {
    try {
      metaguard::parse_size(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const metaguard::Error &e) {
      EXPECT_NE(std::string(e.what()).find(std::string("'") + bad + "'"), std::string::npos)
          << e.what();
    }
  }
}

// Found by fuzz_sizes: std::stold's own std::invalid_argument and
// std::out_of_range escaped instead of metaguard::Error.
TEST(SizeTest, NumbersStoldRejectsAreBadSizesToo) {
  const std::string huge = std::string(5000, '9') + "GB";
  for (const std::string &bad : {std::string("."), std::string(".GB"), huge}) {
    try {
      metaguard::parse_size(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const metaguard::Error &e) {
      EXPECT_NE(std::string(e.what()).find("'" + bad + "'"), std::string::npos) << e.what();
    }
  }
}

TEST(SizeTest, SizeAcceptsNumbersAndStrings) {
  EXPECT_EQ(metaguard::Size(100).bytes(), 100);
  EXPECT_EQ(metaguard::Size("2KiB").bytes(), 2048);
  EXPECT_EQ(metaguard::Size(std::string("1MB")).bytes(), 1000000);
  EXPECT_THROW(metaguard::Size(-1), metaguard::Error);
}

TEST(DeviceMapTest, LongestPrefixWins) {
  metaguard::DeviceMap map{{"", "cpu"}, {"layers.1", "disk"}, {"layers.1.mlp", "meta"}};
  EXPECT_EQ(map.placement_for("embed.weight")->str(), "cpu");
  EXPECT_TRUE(map.placement_for("layers.1.attn.weight")->is_disk());
  EXPECT_TRUE(map.placement_for("layers.1")->is_disk());
  EXPECT_EQ(map.placement_for("layers.1.mlp.weight")->str(), "meta");
  EXPECT_EQ(map.placement_for("layers.10.weight")->str(), "cpu")
      << "a prefix covers whole name components only";
  EXPECT_TRUE(map.has_disk());
}

TEST(DeviceMapTest, UncoveredNameHasNoPlacement) {
  metaguard::DeviceMap map{{"encoder", "cpu"}};
  EXPECT_FALSE(map.placement_for("decoder.weight").has_value());
  EXPECT_FALSE(map.placement_for("encoderx.weight").has_value());
}

TEST(DeviceMapTest, EmptyAndStrategies) {
  EXPECT_TRUE(metaguard::DeviceMap().empty());
  EXPECT_FALSE(metaguard::DeviceMap::automatic().empty());
  EXPECT_EQ(metaguard::DeviceMap::balanced_low_0().strategy(),
            metaguard::DeviceMap::Strategy::BalancedLow0);
  auto on = metaguard::DeviceMap::on(torch::kCPU);
  EXPECT_EQ(on.placement_for("anything.at.all")->device(), torch::Device(torch::kCPU));
  EXPECT_THROW(metaguard::Placement::disk().device(), metaguard::Error);
  EXPECT_THROW(metaguard::Placement("floppy"), metaguard::Error);
}

TEST(MaxMemoryTest, ParsesBudgets) {
  metaguard::MaxMemory mm{{"cpu", "2GiB"}, {"cuda:0", 1000}};
  EXPECT_EQ(*mm.budget("cpu"), 2LL << 30);
  EXPECT_EQ(*mm.budget("cuda:0"), 1000);
  EXPECT_FALSE(mm.budget("disk").has_value());
  EXPECT_THROW((metaguard::MaxMemory{{"cpu", "lots"}}), metaguard::Error);
}

} // namespace size_test
} // namespace
