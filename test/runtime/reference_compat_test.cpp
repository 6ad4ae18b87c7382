// Files written by the reference safetensors implementation (see
// test/data/safetensors-reference/README.md for where they come from and
// their contents).
#include <metaguard/metaguard.h>

#include "test_paths.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace {
namespace reference_compat_test {

using metaguard::SafetensorsFile;

const std::filesystem::path kDir =
    std::filesystem::path(METAGUARD_TEST_DATA) / "safetensors-reference";

struct Expected {
  const char *name;
  const char *dtype;
  torch::Tensor values;
};

// Values as listed in the README.
std::vector<Expected> loadable() {
  return {
      {"B", "U8", torch::tensor({253, 254, 255, 0, 1, 2}, torch::kUInt8)},
      {"b", "I8", torch::tensor({-3, -2, -1, 0, 1, 2}, torch::kInt8)},
      {"h", "I16", torch::tensor({-3, -2, -1, 0, 1, 2}, torch::kInt16)},
      {"i", "I32", torch::tensor({-3, -2, -1, 0, 1, 2}, torch::kInt32)},
      {"e", "F16", torch::tensor({-3.0, -2.0, -1.0, 0.0, 1.0, 2.0}, torch::kFloat16)},
      {"f", "F32", torch::tensor({-3.0, -2.0, -1.0, 0.0, 1.0, 2.0}, torch::kFloat32)},
      {"d", "F64", torch::tensor({-3.0, -2.0, -1.0, 0.0, 1.0, 2.0}, torch::kFloat64)},
  };
}

void expect_unsupported(const SafetensorsFile &file, const std::string &name, const std::string &dtype) {
  try {
    file.tensor(name);
    FAIL() << name << " loaded";
  } catch (const metaguard::FormatError &e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("tensor '" + name + "'"), std::string::npos) << what;
    EXPECT_NE(what.find("dtype " + dtype), std::string::npos) << what;
  }
}

TEST(ReferenceCompatTest, ReadsEverySingleTensorFile) {
  for (const auto &e : loadable()) {
    SCOPED_TRACE(e.name);
    SafetensorsFile file(kDir / (std::string(e.name) + ".safetensors"));
    EXPECT_EQ(file.names(), std::vector<std::string>{e.name});
    EXPECT_EQ(file.metadata(), (std::map<std::string, std::string>{{"test", "a"}}));
    EXPECT_EQ(file.info(e.name).dtype, e.dtype);
    EXPECT_EQ(file.info(e.name).shape, std::vector<int64_t>{6});
    EXPECT_TRUE(torch::equal(file.tensor(e.name), e.values));
  }
}

TEST(ReferenceCompatTest, U16AndU32FilesOpenButTheirTensorsNameTheDtype) {
  SafetensorsFile h(kDir / "H.safetensors");
  EXPECT_EQ(h.info("H").dtype, "U16");
  EXPECT_EQ(h.info("H").nbytes(), 12);
  expect_unsupported(h, "H", "U16");
  SafetensorsFile i(kDir / "I.safetensors");
  EXPECT_EQ(i.info("I").nbytes(), 24);
  expect_unsupported(i, "I", "U32");
}

TEST(ReferenceCompatTest, OverallFileLoadsEveryOtherTensorByName) {
  SafetensorsFile file(kDir / "overall.safetensors");
  EXPECT_EQ(file.names(), (std::vector<std::string>{"B", "H", "I", "b", "d", "e", "f", "h", "i"}));
  EXPECT_EQ(file.metadata(), (std::map<std::string, std::string>{{"test", "a"}}));
  for (const auto &e : loadable()) {
    SCOPED_TRACE(e.name);
    EXPECT_TRUE(torch::equal(file.tensor(e.name), e.values));
  }
  expect_unsupported(file, "H", "U16");
  expect_unsupported(file, "I", "U32");
}

TEST(ReferenceCompatTest, OurWriterReproducesTheReferenceValues) {
  // Re-saving what we read and reading it back gives the same values: the
  // two writers agree on the byte meaning of every dtype.
  SafetensorsFile file(kDir / "overall.safetensors");
  metaguard::NamedTensors tensors;
  for (const auto &e : loadable())
    tensors.emplace_back(e.name, file.tensor(e.name));
  const auto out = std::filesystem::temp_directory_path() / "metaguard-reference-resave.safetensors";
  metaguard::save_safetensors(out, tensors, {{"test", "a"}});
  SafetensorsFile again(out);
  for (const auto &e : loadable())
    EXPECT_TRUE(torch::equal(again.tensor(e.name), e.values)) << e.name;
  EXPECT_EQ(again.metadata(), file.metadata());
  std::filesystem::remove(out);
}

} // namespace reference_compat_test
} // namespace
