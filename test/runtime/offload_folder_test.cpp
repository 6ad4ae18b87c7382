// accelerate's offload folder format: round trips, a folder written byte by
// byte exactly as accelerate writes it, and every kind of bad data.
#include <metaguard/metaguard.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace {
namespace offload_folder_test {

namespace fs = std::filesystem;
using metaguard::OffloadError;
using metaguard::OffloadFolder;

std::string read_file(const fs::path &p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const fs::path &p, const std::string &bytes) {
  std::ofstream out(p, std::ios::binary);
  out << bytes;
}

template <class T> std::string le_bytes(std::initializer_list<T> values) {
  std::string out;
  for (T v : values) {
    char buf[sizeof(T)];
    std::memcpy(buf, &v, sizeof(T)); // the tests run on little-endian hosts, as the format requires
    out.append(buf, sizeof(T));
  }
  return out;
}

// Expects `f` to throw OffloadError whose message contains every needle.
template <class F> void expect_offload_error(F &&f, std::initializer_list<std::string> needles) {
  try {
    f();
    ADD_FAILURE() << "expected OffloadError";
  } catch (const OffloadError &e) {
    const std::string what = e.what();
    for (const auto &n : needles)
      EXPECT_NE(what.find(n), std::string::npos) << "missing '" << n << "' in: " << what;
  }
}

class OffloadFolderTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("metaguard_offload_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(OffloadFolderTest, RoundTripsEveryDtypeScalarsAndEmptyTensors) {
  torch::manual_seed(3);
  std::map<std::string, torch::Tensor> tensors{
      {"f64", torch::randn({3, 2}, torch::kFloat64)},
      {"f32", torch::randn({4}, torch::kFloat32)},
      {"f16", torch::randn({2, 3}).to(torch::kFloat16)},
      {"bf16", torch::randn({5}).to(torch::kBFloat16)},
      {"i64", torch::randint(-1000, 1000, {3}, torch::kInt64)},
      {"i32", torch::randint(-1000, 1000, {3}, torch::kInt32)},
      {"i16", torch::randint(-1000, 1000, {3}, torch::kInt16)},
      {"i8", torch::randint(-100, 100, {3}, torch::kInt8)},
      {"u8", torch::randint(0, 255, {3}, torch::kUInt8)},
      {"bool", torch::randint(0, 2, {4}).to(torch::kBool)},
      {"scalar", torch::tensor(2.5f).reshape({})},
      {"bf16_scalar", torch::tensor(-1.5f).to(torch::kBFloat16).reshape({})},
      {"empty", torch::empty({0, 4})},
      {"transposed", torch::arange(6, torch::kFloat32).reshape({2, 3}).t()},
      {"layers.0.attn.weight", torch::randn({2, 2})},
  };
  metaguard::offload_tensors(dir_, tensors);
  OffloadFolder folder(dir_);
  EXPECT_EQ(folder.names().size(), tensors.size());
  for (const auto &[name, t] : tensors) {
    const torch::Tensor back = folder.load(name);
    EXPECT_EQ(back.scalar_type(), t.scalar_type()) << name;
    EXPECT_EQ(back.sizes(), t.sizes()) << name;
    EXPECT_TRUE(torch::equal(back, t)) << name;
  }
  EXPECT_EQ(folder.load("scalar").dim(), 0);
}

// From 8 MiB a .dat is mapped, not copied: each load is a copy-on-write
// mapping of its own.
TEST_F(OffloadFolderTest, ALargeTensorIsMappedFreshAndCopyOnWrite) {
  const auto value = torch::randn({3 * 1024 * 1024 + 5}); // 12 MiB, not a whole number of 2 MiB
  metaguard::offload_tensors(dir_, {{"big", value}});
  OffloadFolder folder(dir_);
  torch::Tensor first = folder.load("big");
  torch::Tensor second = folder.load("big");
  EXPECT_TRUE(torch::equal(first, value));
  EXPECT_NE(first.data_ptr(), second.data_ptr());
  first.fill_(7);
  EXPECT_TRUE(torch::equal(second, value));
  EXPECT_TRUE(torch::equal(folder.load("big"), value));
  first = torch::Tensor();
  EXPECT_TRUE(torch::equal(second, value)) << "a load outlives the one before it";
}

TEST_F(OffloadFolderTest, WritesAcceleratesIndexAndRawBytes) {
  metaguard::offload_tensors(dir_, {{"w", torch::tensor({1.0f, -2.0f}).to(torch::kBFloat16)},
                                    {"s", torch::tensor(int64_t{7}).reshape({})},
                                    {"m", torch::tensor({true, false})}});
  const auto index = nlohmann::json::parse(read_file(dir_ / "index.json"));
  EXPECT_EQ(index, nlohmann::json::parse(R"({
    "m": {"dtype": "bool", "shape": [2]},
    "s": {"dtype": "int64", "shape": []},
    "w": {"dtype": "bfloat16", "shape": [2]}})"));
  // bfloat16 as its int16 bits; a 0-d tensor as one element.
  EXPECT_EQ(read_file(dir_ / "w.dat"), le_bytes<std::uint16_t>({0x3F80, 0xC000}));
  EXPECT_EQ(read_file(dir_ / "s.dat"), le_bytes<std::int64_t>({7}));
  EXPECT_EQ(read_file(dir_ / "m.dat"), std::string("\x01\x00", 2));
  // No temporary file is left behind.
  for (const auto &entry : fs::directory_iterator(dir_))
    EXPECT_EQ(entry.path().string().find(".tmp"), std::string::npos) << entry.path();
}

TEST_F(OffloadFolderTest, MergesWithAnExistingIndex) {
  metaguard::offload_tensors(dir_, {{"a", torch::ones({2})}});
  metaguard::offload_tensors(dir_, {{"b", torch::zeros({3})}});
  OffloadFolder folder(dir_);
  EXPECT_EQ(folder.names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(torch::equal(folder.load("a"), torch::ones({2})));
}

// A folder exactly as accelerate's offload_state_dict writes it: json.dump
// with indent=2 in insertion order, numpy memmaps of the raw bytes.
TEST_F(OffloadFolderTest, ReadsAnAccelerateWrittenFolder) {
  fs::create_directories(dir_);
  write_file(dir_ / "index.json", "{\n"
                                  "  \"model.layers.0.weight\": {\n"
                                  "    \"dtype\": \"float32\",\n"
                                  "    \"shape\": [\n"
                                  "      2,\n"
                                  "      2\n"
                                  "    ]\n"
                                  "  },\n"
                                  "  \"model.layers.0.bias\": {\n"
                                  "    \"dtype\": \"bfloat16\",\n"
                                  "    \"shape\": [\n"
                                  "      2\n"
                                  "    ]\n"
                                  "  },\n"
                                  "  \"model.step\": {\n"
                                  "    \"dtype\": \"int64\",\n"
                                  "    \"shape\": []\n"
                                  "  },\n"
                                  "  \"model.half\": {\n"
                                  "    \"dtype\": \"float16\",\n"
                                  "    \"shape\": [\n"
                                  "      1\n"
                                  "    ]\n"
                                  "  },\n"
                                  "  \"model.mask\": {\n"
                                  "    \"dtype\": \"bool\",\n"
                                  "    \"shape\": [\n"
                                  "      3\n"
                                  "    ]\n"
                                  "  }\n"
                                  "}");
  write_file(dir_ / "model.layers.0.weight.dat", le_bytes<float>({1.5f, -2.0f, 3.25f, 0.0f}));
  write_file(dir_ / "model.layers.0.bias.dat", le_bytes<std::int16_t>({0x3F80, static_cast<std::int16_t>(0xC040)}));
  write_file(dir_ / "model.step.dat", le_bytes<std::int64_t>({123456789012LL}));
  write_file(dir_ / "model.half.dat", le_bytes<std::uint16_t>({0x3C00}));
  write_file(dir_ / "model.mask.dat", std::string("\x01\x00\x01", 3));

  OffloadFolder folder(dir_);
  EXPECT_TRUE(torch::equal(folder.load("model.layers.0.weight"), torch::tensor({{1.5f, -2.0f}, {3.25f, 0.0f}})));
  const torch::Tensor bias = folder.load("model.layers.0.bias");
  EXPECT_EQ(bias.scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(torch::equal(bias.to(torch::kFloat32), torch::tensor({1.0f, -3.0f})));
  const torch::Tensor step = folder.load("model.step");
  EXPECT_EQ(step.dim(), 0);
  EXPECT_EQ(step.item<std::int64_t>(), 123456789012LL);
  EXPECT_EQ(folder.load("model.half").to(torch::kFloat32).item<float>(), 1.0f);
  EXPECT_TRUE(torch::equal(folder.load("model.mask"), torch::tensor({true, false, true})));
  EXPECT_EQ(folder.dtype("model.layers.0.bias"), torch::kBFloat16);
  EXPECT_EQ(folder.shape("model.layers.0.weight"), (std::vector<std::int64_t>{2, 2}));
}

TEST_F(OffloadFolderTest, MissingDatNamesFileAndTensor) {
  metaguard::offload_tensors(dir_, {{"enc.weight", torch::ones({4})}});
  fs::remove(dir_ / "enc.weight.dat");
  OffloadFolder folder(dir_);
  expect_offload_error([&] { folder.load("enc.weight"); },
                       {"enc.weight", (dir_ / "enc.weight.dat").string(), "missing"});
}

TEST_F(OffloadFolderTest, SizeMismatchNamesFileTensorAndSizes) {
  metaguard::offload_tensors(dir_, {{"enc.weight", torch::ones({4})}});
  write_file(dir_ / "enc.weight.dat", std::string(12, '\0'));
  OffloadFolder folder(dir_);
  expect_offload_error([&] { folder.load("enc.weight"); },
                       {"enc.weight", (dir_ / "enc.weight.dat").string(), "12 bytes", "16 bytes", "float32"});
}

TEST_F(OffloadFolderTest, UnknownDtypeNamesIndexTensorAndDtype) {
  fs::create_directories(dir_);
  write_file(dir_ / "index.json", R"({"x": {"dtype": "float128", "shape": [1]}, "y": {"dtype": "float32", "shape": [1]}})");
  write_file(dir_ / "x.dat", std::string(16, '\0'));
  write_file(dir_ / "y.dat", le_bytes<float>({4.0f}));
  OffloadFolder folder(dir_); // one bad entry does not block the others
  EXPECT_EQ(folder.load("y").item<float>(), 4.0f);
  expect_offload_error([&] { folder.load("x"); }, {"'x'", "index.json", "float128"});
}

TEST_F(OffloadFolderTest, MalformedIndexesAreRefused) {
  fs::create_directories(dir_);
  expect_offload_error([&] { OffloadFolder f(dir_); }, {"has no index.json", dir_.string()});
  write_file(dir_ / "index.json", "{not json");
  expect_offload_error([&] { OffloadFolder f(dir_); }, {"index.json", "not valid JSON"});
  write_file(dir_ / "index.json", R"({"x": {"dtype": "float32", "shape": [-1]}})");
  expect_offload_error([&] { OffloadFolder f(dir_); }, {"'x'", "non-negative"});
  write_file(dir_ / "index.json", R"({"../escape": {"dtype": "float32", "shape": [1]}})");
  expect_offload_error([&] { OffloadFolder f(dir_); }, {"../escape", "file name"});
  write_file(dir_ / "index.json", R"({"x": {"shape": [1]}})");
  expect_offload_error([&] { OffloadFolder f(dir_); }, {"'x'", "dtype"});
}

// Found by fuzz_offload_folder: elements x element size overflowed int64
// (undefined behaviour) instead of being refused.
TEST_F(OffloadFolderTest, AShapeWhoseByteCountOverflowsIsRefused) {
  fs::create_directories(dir_);
  write_file(dir_ / "index.json", R"({"w": {"dtype": "float32", "shape": [4611686018427387904]}})");
  write_file(dir_ / "w.dat", "");
  OffloadFolder folder(dir_);
  expect_offload_error([&] { folder.load("w"); }, {"'w'", "index.json", "overflows"});
  expect_offload_error([&] { folder.check("w"); }, {"'w'", "overflows"});
}

TEST_F(OffloadFolderTest, UnknownTensorSaysTheFolderIsStale) {
  metaguard::offload_tensors(dir_, {{"a", torch::ones({1})}});
  OffloadFolder folder(dir_);
  EXPECT_FALSE(folder.contains("b"));
  expect_offload_error([&] { folder.load("b"); }, {"'b'", "index.json", "stale"});
}

TEST_F(OffloadFolderTest, AFailedWriteLeavesTheFolderAsItWas) {
  metaguard::offload_tensors(dir_, {{"a", torch::ones({4})}});
  const std::string index_before = read_file(dir_ / "index.json");
  const std::string a_before = read_file(dir_ / "a.dat");
  // "a" is written first (to a temporary), then the over-long name fails.
  const std::string too_long(300, 'x');
  expect_offload_error(
      [&] { metaguard::offload_tensors(dir_, {{"a", torch::zeros({4})}, {too_long, torch::zeros({1})}}); },
      {"cannot create", "nothing in the offload folder was changed"});
  EXPECT_EQ(read_file(dir_ / "index.json"), index_before);
  EXPECT_EQ(read_file(dir_ / "a.dat"), a_before);
  std::size_t files = 0;
  for (const auto &entry : fs::directory_iterator(dir_)) {
    (void)entry;
    ++files;
  }
  EXPECT_EQ(files, 2u) << "temporary files are removed";
}

TEST_F(OffloadFolderTest, RefusesUnwritableInputsBeforeWriting) {
  expect_offload_error([&] { metaguard::offload_tensors(dir_, {{"a/b", torch::ones({1})}}); }, {"a/b", "file name"});
  expect_offload_error([&] { metaguard::offload_tensors(dir_, {{"m", torch::empty({2}, torch::kMeta)}}); },
                       {"'m'", "meta"});
  EXPECT_FALSE(fs::exists(dir_));
}

TEST_F(OffloadFolderTest, NumpyNames) {
  EXPECT_EQ(metaguard::numpy_dtype_name(torch::kBFloat16), "bfloat16");
  EXPECT_EQ(metaguard::numpy_dtype_name(torch::kUInt8), "uint8");
  EXPECT_EQ(metaguard::dtype_from_numpy_name("float16", "t"), torch::kFloat16);
  expect_offload_error([] { metaguard::dtype_from_numpy_name("uint16", "tensor 'q'"); }, {"tensor 'q'", "uint16"});
}

// A stale folder (written for another shape) is caught when hooks are
// attached, before any parameter changes.
TEST_F(OffloadFolderTest, StaleIndexIsCaughtBeforeAttaching) {
  torch::nn::Linear linear(4, 4);
  metaguard::offload_tensors(dir_, {{"weight", torch::ones({8, 4})}, {"bias", torch::ones({4})}});
  auto folder = std::make_shared<OffloadFolder>(dir_);
  try {
    metaguard::attach_offload_hooks(*linear, metaguard::DeviceMap{{"", "disk"}}, folder);
    FAIL() << "expected OffloadError";
  } catch (const OffloadError &e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("weight: index.json says shape [8, 4]"), std::string::npos) << what;
    EXPECT_NE(what.find("[4, 4]"), std::string::npos) << what;
    EXPECT_NE(what.find(dir_.string()), std::string::npos) << what;
    EXPECT_NE(what.find("No parameter was changed"), std::string::npos) << what;
  }
  EXPECT_FALSE(linear->weight.is_meta());
  EXPECT_FALSE(metaguard::has_offloaded_parameters(*linear));
}

TEST_F(OffloadFolderTest, MissingDatIsCaughtBeforeAttaching) {
  torch::nn::Linear linear(4, 4);
  metaguard::offload_tensors(dir_, {{"weight", linear->weight}, {"bias", linear->bias}});
  fs::remove(dir_ / "bias.dat");
  auto folder = std::make_shared<OffloadFolder>(dir_);
  expect_offload_error(
      [&] { metaguard::attach_offload_hooks(*linear, metaguard::DeviceMap{{"", "disk"}}, folder); },
      {"bias", (dir_ / "bias.dat").string(), "missing"});
  EXPECT_FALSE(linear->bias.is_meta());
}

} // namespace offload_folder_test
} // namespace
