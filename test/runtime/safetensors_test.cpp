// SafetensorsFile and save_safetensors: round trips, files built by hand,
// the writer's byte layout, zero-copy and copy-on-write reading.
#include <metaguard/metaguard.h>

#include "loading_test_util.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <unistd.h>

namespace {
namespace safetensors_test {

using metaguard::FormatError;
using metaguard::SafetensorsFile;
using metaguard_test::TempDir;

struct DtypeCase {
  torch::Dtype dtype;
  const char *name;
};

// Every dtype LibTorch 1.13 can hold that the format names.
const DtypeCase kDtypeCases[] = {
    {torch::kFloat64, "F64"}, {torch::kFloat32, "F32"},     {torch::kFloat16, "F16"},
    {torch::kBFloat16, "BF16"}, {torch::kComplexFloat, "C64"}, {torch::kInt64, "I64"},
    {torch::kInt32, "I32"},   {torch::kInt16, "I16"},       {torch::kInt8, "I8"},
    {torch::kUInt8, "U8"},    {torch::kBool, "BOOL"},
};

torch::Tensor sample(torch::Dtype dtype, std::vector<int64_t> shape) {
  const int64_t n = c10::multiply_integers(shape);
  if (dtype == torch::kBool)
    return (torch::arange(n) % 3 == 0).reshape(shape);
  if (dtype == torch::kUInt8)
    return torch::arange(n).remainder(256).to(dtype).reshape(shape);
  if (dtype == torch::kComplexFloat)
    return torch::complex(torch::arange(n).to(torch::kFloat) - 3,
                          torch::arange(n).to(torch::kFloat) * 0.5)
        .reshape(shape);
  return (torch::arange(n) - n / 2).to(dtype).reshape(shape);
}

TEST(SafetensorsTest, RoundTripsEveryDtype) {
  TempDir dir;
  metaguard::NamedTensors tensors;
  for (const auto &c : kDtypeCases)
    tensors.emplace_back(std::string("t_") + c.name, sample(c.dtype, {2, 3}));
  metaguard::save_safetensors(dir / "all.safetensors", tensors);

  SafetensorsFile file(dir / "all.safetensors");
  EXPECT_EQ(file.names().size(), tensors.size());
  for (const auto &c : kDtypeCases) {
    const std::string name = std::string("t_") + c.name;
    SCOPED_TRACE(name);
    EXPECT_EQ(file.info(name).dtype, c.name);
    EXPECT_EQ(file.info(name).shape, (std::vector<int64_t>{2, 3}));
    const torch::Tensor loaded = file.tensor(name);
    EXPECT_EQ(loaded.scalar_type(), c.dtype);
    EXPECT_TRUE(torch::equal(loaded, sample(c.dtype, {2, 3})));
  }
}

TEST(SafetensorsTest, RoundTripsScalarAndEmptyTensors) {
  TempDir dir;
  metaguard::save_safetensors(dir / "x.safetensors",
                              {{"scalar", torch::tensor(2.5)},
                               {"empty", torch::empty({0}, torch::kInt32)},
                               {"empty3d", torch::empty({3, 0, 2}, torch::kFloat16)}});
  SafetensorsFile file(dir / "x.safetensors");
  const auto scalar = file.tensor("scalar");
  EXPECT_EQ(scalar.dim(), 0);
  EXPECT_EQ(scalar.item<float>(), 2.5f);
  EXPECT_EQ(file.tensor("empty").sizes(), (std::vector<int64_t>{0}));
  EXPECT_EQ(file.tensor("empty").scalar_type(), torch::kInt32);
  EXPECT_EQ(file.tensor("empty3d").sizes(), (std::vector<int64_t>{3, 0, 2}));
  EXPECT_EQ(file.info("empty3d").nbytes(), 0);
}

TEST(SafetensorsTest, ReadsAFileBuiltByteByByte) {
  TempDir dir;
  using metaguard_test::le_bytes;
  const std::string header =
      R"({"__metadata__":{"author":"test"},"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("ids":{"dtype":"I16","shape":[1,2],"data_offsets":[8,12]}})";
  const std::string data = le_bytes<std::uint32_t>(0x3FC00000) /* 1.5 */ +
                           le_bytes<std::uint32_t>(0xC0000000) /* -2.0 */ +
                           le_bytes<std::int16_t>(7) + le_bytes<std::int16_t>(-1);
  metaguard_test::write_bytes(dir / "hand.safetensors", metaguard_test::safetensors_bytes(header, data));

  SafetensorsFile file(dir / "hand.safetensors");
  EXPECT_EQ(file.names(), (std::vector<std::string>{"w", "ids"}));
  EXPECT_EQ(file.metadata(), (std::map<std::string, std::string>{{"author", "test"}}));
  EXPECT_EQ(file.data_offset(), 8 + static_cast<std::int64_t>(header.size()));
  EXPECT_TRUE(torch::equal(file.tensor("w"), torch::tensor({1.5f, -2.0f})));
  EXPECT_TRUE(torch::equal(file.tensor("ids"), torch::tensor({{7, -1}}, torch::kInt16)));
  EXPECT_EQ(file.info("ids").begin, 8);
  EXPECT_EQ(file.info("ids").end, 12);
}

TEST(SafetensorsTest, WriterLaysOutTheFileLikeTheReference) {
  TempDir dir;
  metaguard::save_safetensors(dir / "x.safetensors",
                              {{"b", torch::tensor({1.0f, 2.0f})},
                               {"a", torch::tensor({1, 2, 3}, torch::kInt8)},
                               {"c", torch::tensor({4.0}, torch::kFloat64)}});
  const std::string bytes = metaguard_test::read_bytes(dir / "x.safetensors");
  // Largest element size first, then by name; metadata first; no spaces but
  // the padding that brings the header to a multiple of 8 bytes.
  std::string expected_header =
      R"({"__metadata__":{"format":"pt"},"c":{"dtype":"F64","shape":[1],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]},)"
      R"("a":{"dtype":"I8","shape":[3],"data_offsets":[16,19]}})";
  expected_header.append((8 - expected_header.size() % 8) % 8, ' ');
  ASSERT_EQ(expected_header.size() % 8, 0u);
  EXPECT_EQ(bytes.substr(0, 8), metaguard_test::length_prefix(expected_header.size()));
  EXPECT_EQ(bytes.substr(8, expected_header.size()), expected_header);
  const std::string data = bytes.substr(8 + expected_header.size());
  EXPECT_EQ(data, metaguard_test::le_bytes(4.0) + metaguard_test::le_bytes(1.0f) +
                      metaguard_test::le_bytes(2.0f) + std::string("\x01\x02\x03", 3));
}

TEST(SafetensorsTest, WritesNoMetadataWhenGivenNone) {
  TempDir dir;
  metaguard::save_safetensors(dir / "x.safetensors", {{"a", torch::zeros({1})}}, {});
  const std::string bytes = metaguard_test::read_bytes(dir / "x.safetensors");
  EXPECT_EQ(bytes.find("__metadata__"), std::string::npos);
  EXPECT_TRUE(SafetensorsFile(dir / "x.safetensors").metadata().empty());
}

TEST(SafetensorsTest, AlignedTensorsAreZeroCopyAndWritesStayPrivate) {
  TempDir dir;
  const auto original = torch::arange(1024, torch::kFloat32);
  metaguard::save_safetensors(dir / "x.safetensors", {{"x", original}});
  torch::Tensor loaded;
  {
    SafetensorsFile file(dir / "x.safetensors");
    loaded = file.tensor("x");
    // Both reads point at the same mapped bytes: nothing was copied.
    EXPECT_EQ(file.tensor("x").data_ptr(), loaded.data_ptr());
  }
  // The tensor keeps the mapping alive after the file object is gone, and
  // writing to it is allowed (copy-on-write) without touching the file.
  loaded.add_(1);
  EXPECT_TRUE(torch::equal(loaded, original + 1));
  EXPECT_TRUE(torch::equal(SafetensorsFile(dir / "x.safetensors").tensor("x"), original));
}

// A layer's small tensors read together lie in one private mapping, as in
// the file (nothing copied), yet each stays private: a write to one reaches
// neither its neighbours, nor the file, nor the next load; and a survivor
// outlives the others' memory.
TEST(SafetensorsTest, NeighboursLoadedTogetherShareOneMappingAndNoValues) {
  TempDir dir;
  const auto a = torch::randn({64, 64});
  const auto b = torch::randn({300});
  const auto c = torch::randn({16, 16}, torch::kFloat64);
  metaguard::save_safetensors(dir / "x.safetensors", {{"a", a}, {"b", b}, {"c", c}});
  SafetensorsFile file(dir / "x.safetensors");
  auto loaded = file.private_tensors({"b", "a", "c"});
  ASSERT_EQ(loaded.size(), 3u);
  EXPECT_TRUE(torch::equal(loaded[0], b));
  EXPECT_TRUE(torch::equal(loaded[1], a));
  EXPECT_TRUE(torch::equal(loaded[2], c));
  const auto address = [](const torch::Tensor &t) { return reinterpret_cast<std::intptr_t>(t.data_ptr()); };
  EXPECT_EQ(address(loaded[0]) - address(loaded[1]), file.info("b").begin - file.info("a").begin)
      << "laid out as in the file: one mapping";

  loaded[1].fill_(0);
  EXPECT_TRUE(torch::equal(loaded[0], b));
  EXPECT_TRUE(torch::equal(loaded[2], c));
  EXPECT_TRUE(torch::equal(file.tensor("a"), a));
  EXPECT_TRUE(torch::equal(file.private_tensors({"a", "b"})[0], a));

  torch::Tensor kept = loaded[0];
  loaded.clear();
  EXPECT_TRUE(torch::equal(kept, b));
}

TEST(SafetensorsTest, PrivateMappingsCoverWholeHugeFoliosWithinTheFile) {
  TempDir dir;
  constexpr std::int64_t kFolio = std::int64_t{2} << 20;
  // 1 MiB ahead of a 9 MiB tensor: it starts and ends inside 2 MiB folios.
  const auto before = torch::randn({256 * 1024});
  const auto big = torch::randn({9 * 256 * 1024});
  const auto after = torch::randn({1000});
  metaguard::save_safetensors(dir / "x.safetensors", {{"a_before", before}, {"b_big", big}, {"c_after", after}});
  SafetensorsFile file(dir / "x.safetensors");
  ASSERT_NE((file.data_offset() + file.info("b_big").begin) % kFolio, 0);
  auto loaded = file.private_tensor("b_big");
  EXPECT_TRUE(torch::equal(loaded, big));
  const auto m = metaguard_test::maps_entry_of(loaded.data_ptr());
  ASSERT_GE(m.offset, 0) << "the tensor is mapped from the file";
  EXPECT_EQ(m.offset % kFolio, 0) << "starts on a folio boundary of the file";
  const auto first = reinterpret_cast<std::uintptr_t>(loaded.data_ptr());
  EXPECT_EQ(static_cast<std::int64_t>(first - m.begin), file.data_offset() + file.info("b_big").begin - m.offset);
  const auto page = static_cast<std::int64_t>(::sysconf(_SC_PAGESIZE));
  EXPECT_LE(m.offset + static_cast<std::int64_t>(m.end - m.begin), (file.file_size() + page - 1) / page * page)
      << "ends within the file's last page";
  EXPECT_GE(m.offset + static_cast<std::int64_t>(m.end - m.begin),
            file.data_offset() + file.info("b_big").end);

  // The widened edges are copy-on-write too: writes reach no neighbour.
  loaded.fill_(1);
  EXPECT_TRUE(torch::equal(file.private_tensor("a_before"), before));
  EXPECT_TRUE(torch::equal(file.tensor("c_after"), after));
  EXPECT_TRUE(torch::equal(file.private_tensor("b_big"), big));
}

TEST(SafetensorsTest, MisalignedTensorsAreCopied) {
  TempDir dir;
  // A 1-byte tensor first puts the F32 data at an odd address.
  const std::string header =
      R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"f":{"dtype":"F32","shape":[2],"data_offsets":[1,9]}})";
  const std::string data = std::string("\x05", 1) + metaguard_test::le_bytes(3.0f) +
                           metaguard_test::le_bytes(-0.5f);
  std::string bytes = metaguard_test::safetensors_bytes(header, data);
  metaguard_test::write_bytes(dir / "odd.safetensors", bytes);
  SafetensorsFile file(dir / "odd.safetensors");
  const auto f = file.tensor("f");
  EXPECT_TRUE(torch::equal(f, torch::tensor({3.0f, -0.5f})));
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(f.data_ptr()) % 4, 0u);
  EXPECT_NE(file.tensor("f").data_ptr(), f.data_ptr());
  const auto together = file.private_tensors({"a", "f"});
  EXPECT_EQ(together[0].item<std::uint8_t>(), 5);
  EXPECT_TRUE(torch::equal(together[1], torch::tensor({3.0f, -0.5f})));
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(together[1].data_ptr()) % 4, 0u);
}

TEST(SafetensorsTest, ConvertsDtypeOnRequest) {
  TempDir dir;
  const auto original = torch::linspace(-2, 2, 9);
  metaguard::save_safetensors(dir / "x.safetensors", {{"x", original}});
  SafetensorsFile file(dir / "x.safetensors");
  const auto bf16 = file.tensor("x", torch::kBFloat16);
  EXPECT_EQ(bf16.scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(torch::equal(bf16, original.to(torch::kBFloat16)));
  EXPECT_EQ(file.tensor("x", torch::kFloat32).data_ptr(), file.tensor("x").data_ptr());
}

TEST(SafetensorsTest, Float32ToBFloat16MatchesLibTorchBitForBit) {
  TempDir dir;
  // Ties (to even, both ways), NaNs with payloads and signs, infinities, the
  // largest float (rounds to infinity), denormals, plus random values.
  const std::vector<std::uint32_t> special = {0x3F808000, 0x3F818000, 0x7FC00001, 0xFFA00000,
                                              0x7F800000, 0xFF800000, 0x7F7FFFFF, 0x00000001,
                                              0x807FFFFF, 0x00000000, 0x80000000, 0x3F7FFFFF};
  auto bits = torch::empty({static_cast<int64_t>(special.size())}, torch::kInt32);
  for (std::size_t i = 0; i < special.size(); ++i)
    bits[static_cast<int64_t>(i)] = static_cast<int32_t>(special[i]);
  torch::manual_seed(3);
  const auto values = torch::cat({bits.view(torch::kFloat32), torch::randn({1 << 20}) * 1e3,
                                  torch::rand({1000}) * 1e-39});
  metaguard::save_safetensors(dir / "x.safetensors", {{"x", values}});
  const auto ours = SafetensorsFile(dir / "x.safetensors").tensor("x", torch::kBFloat16);
  const auto theirs = values.to(torch::kBFloat16);
  // NaNs stay NaN (LibTorch's own scalar and vector paths disagree on the
  // NaN bit pattern); every other value is bit for bit LibTorch's.
  const auto nan = torch::isnan(values);
  EXPECT_TRUE(torch::equal(torch::isnan(ours), nan));
  EXPECT_TRUE(torch::equal(ours.view(torch::kInt16).masked_fill(nan, 0),
                           theirs.view(torch::kInt16).masked_fill(nan, 0)));
}

TEST(SafetensorsTest, UnknownNameIsAnErrorNamingFileAndTensor) {
  TempDir dir;
  metaguard::save_safetensors(dir / "x.safetensors", {{"x", torch::zeros({1})}});
  SafetensorsFile file(dir / "x.safetensors");
  EXPECT_FALSE(file.contains("y"));
  try {
    file.tensor("y");
    FAIL() << "no error";
  } catch (const FormatError &e) {
    EXPECT_NE(std::string(e.what()).find("x.safetensors"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("tensor 'y': no tensor of that name"), std::string::npos);
  }
}

void expect_save_error(const metaguard::NamedTensors &tensors, const std::string &text) {
  TempDir dir;
  try {
    metaguard::save_safetensors(dir / "x.safetensors", tensors);
    FAIL() << "no error, expected: " << text;
  } catch (const FormatError &e) {
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir.path())) << "no file or temporary left behind";
}

TEST(SafetensorsTest, RefusesTensorsItCannotSave) {
  expect_save_error({{"m", torch::empty({2}, torch::kMeta)}},
                    "tensor 'm': the tensor is on the meta device");
  expect_save_error({{"a", torch::zeros({1})}, {"a", torch::zeros({1})}},
                    "tensor 'a': the name is given twice");
  expect_save_error({{"__metadata__", torch::zeros({1})}}, "the name is reserved");
  expect_save_error({{"z", torch::zeros({1}, torch::kComplexDouble)}},
                    "tensor 'z': dtype ComplexDouble has no safetensors name");
  expect_save_error({{std::string("bad\xff"), torch::zeros({1})}}, "is not valid UTF-8");
}

TEST(SafetensorsTest, FailedSaveLeavesTheEarlierFileIntact) {
  TempDir dir;
  metaguard::save_safetensors(dir / "x.safetensors", {{"x", torch::ones({4})}});
  // A directory cannot be replaced by a file: the rename fails.
  std::filesystem::create_directory(dir / "blocked.safetensors");
  try {
    metaguard::save_safetensors(dir / "blocked.safetensors", {{"x", torch::zeros({4})}});
    FAIL() << "no error";
  } catch (const FormatError &e) {
    EXPECT_NE(std::string(e.what()).find("blocked.safetensors"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("Is a directory"), std::string::npos) << e.what();
  }
  // A folder that does not exist: no temporary file can be made.
  EXPECT_THROW(metaguard::save_safetensors(dir / "missing" / "x.safetensors", {{"x", torch::ones({1})}}),
               FormatError);
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto &entry : std::filesystem::directory_iterator(dir.path()))
    ++entries;
  EXPECT_EQ(entries, 2u) << "no temporary file left behind";
  EXPECT_TRUE(torch::equal(SafetensorsFile(dir / "x.safetensors").tensor("x"), torch::ones({4})));
}

} // namespace safetensors_test
} // namespace
