// The safetensors header parser on bytes alone, and the kinds of the
// FormatErrors the readers raise (what a caller matches on instead of text).
#include <metaguard/metaguard.h>
#include <metaguard/safetensors_header.h>

#include "loading_test_util.h"
#include "test_paths.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

namespace {
namespace safetensors_header_test {

using metaguard::FormatError;
using Kind = metaguard::FormatError::Kind;
using metaguard_test::le_bytes;
using metaguard_test::safetensors_bytes;
using metaguard_test::TempDir;

const std::filesystem::path kReference = std::filesystem::path(METAGUARD_TEST_DATA) / "safetensors-reference";

std::string file_bytes(const std::filesystem::path &file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Parses a whole file's bytes the way SafetensorsFile does, but in memory.
metaguard::SafetensorsHeader parse_bytes(const std::string &bytes) {
  const auto size = static_cast<std::int64_t>(bytes.size());
  const std::uint64_t length = metaguard::safetensors_header_length(
      std::string_view(bytes).substr(0, metaguard::kSafetensorsProbeBytes), size, 100'000'000,
      "in-memory.safetensors");
  return metaguard::parse_safetensors_header(std::string_view(bytes).substr(8, length), size,
                                             "in-memory.safetensors");
}

// The kind of the FormatError `f` raises.
template <class F> Kind kind_of(F &&f) {
  try {
    f();
  } catch (const FormatError &e) {
    return e.kind();
  }
  ADD_FAILURE() << "no FormatError";
  return Kind::io;
}

TEST(SafetensorsHeaderTest, TheReferenceWritersFileParsesInMemoryAsOnDisk) {
  // Written by huggingface/safetensors itself (test/data's README).
  const auto path = kReference / "overall.safetensors";
  const metaguard::SafetensorsHeader header = parse_bytes(file_bytes(path));
  const metaguard::SafetensorsFile file(path);
  EXPECT_EQ(header.data_offset, file.data_offset());
  EXPECT_EQ(header.metadata, file.metadata());
  ASSERT_EQ(header.tensors.size(), 9u);
  ASSERT_EQ(file.names().size(), 9u);
  for (std::size_t i = 0; i < header.tensors.size(); ++i) {
    const auto &info = header.tensors[i];
    EXPECT_EQ(info.name, file.names()[i]) << "file order is offset order";
    EXPECT_EQ(info.dtype, file.info(info.name).dtype);
    EXPECT_EQ(info.shape, (std::vector<std::int64_t>{6}));
    EXPECT_EQ(info.begin, file.info(info.name).begin);
    EXPECT_EQ(info.end, file.info(info.name).end);
  }
  EXPECT_EQ(header.metadata.at("test"), "a");
}

TEST(SafetensorsHeaderTest, ErrorsNameTheFileGivenAndTheRule) {
  const std::string gap = safetensors_bytes(
      R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", le_bytes(1.0f) + le_bytes(2.0f));
  try {
    parse_bytes(gap);
    FAIL();
  } catch (const FormatError &e) {
    EXPECT_EQ(e.kind(), Kind::malformed);
    EXPECT_NE(std::string(e.what()).find("safetensors file 'in-memory.safetensors': tensor 'a': "
                                         "data_offsets [4, 8] leave a gap"),
              std::string::npos)
        << e.what();
  }
}

class FormatErrorKindTest : public testing::Test {
protected:
  std::filesystem::path write(const std::string &name, const std::string &bytes) {
    const auto path = dir_ / name;
    metaguard_test::write_bytes(path, bytes);
    return path;
  }
  TempDir dir_;
};

TEST_F(FormatErrorKindTest, SafetensorsFiles) {
  const std::string one = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  EXPECT_EQ(kind_of([&] { metaguard::SafetensorsFile(write("gap.safetensors", safetensors_bytes(
      R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", std::string(8, '\0')))); }),
            Kind::malformed);
  EXPECT_EQ(kind_of([&] { metaguard::SafetensorsFile(write("short.safetensors", safetensors_bytes(one, "ab"))); }),
            Kind::truncated);
  EXPECT_EQ(kind_of([&] { metaguard::SafetensorsFile(write("lfs.safetensors",
      "version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 5\n")); }),
            Kind::lfs_pointer);
  EXPECT_EQ(kind_of([&] { metaguard::SafetensorsFile(dir_ / "none.safetensors"); }), Kind::missing);
  const metaguard::SafetensorsFile ok(write("ok.safetensors", safetensors_bytes(one, le_bytes(1.0f))));
  EXPECT_EQ(kind_of([&] { ok.tensor("b"); }), Kind::missing);
  // U32 has no LibTorch dtype on either version metaguard supports.
  const metaguard::SafetensorsFile reference(kReference / "I.safetensors");
  EXPECT_EQ(kind_of([&] { reference.tensor("I"); }), Kind::unsupported);
}

TEST_F(FormatErrorKindTest, CheckpointsAndModels) {
  EXPECT_EQ(kind_of([&] { metaguard::open_checkpoint(dir_ / "nothing-here"); }), Kind::missing);
  // A checkpoint that holds other shapes than the model's does not fit it.
  torch::nn::Linear model(2, 3);
  const auto folder = dir_ / "other-shapes";
  std::filesystem::create_directory(folder);
  metaguard::save_safetensors(folder / "model.safetensors",
                              {{"weight", torch::zeros({4, 2})}, {"bias", torch::zeros({4})}});
  EXPECT_EQ(kind_of([&] { metaguard::load_weights(*model, folder); }), Kind::mismatch);
}

} // namespace safetensors_header_test
} // namespace
