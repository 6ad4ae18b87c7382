// Every validation rule of the safetensors reader has a failing input here,
// built by hand, with the error text it must produce. And no input crashes.
#include <metaguard/metaguard.h>

#include "loading_test_util.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <random>

namespace {
namespace safetensors_validation_test {

using metaguard::FormatError;
using metaguard::SafetensorsFile;
using metaguard_test::le_bytes;
using metaguard_test::safetensors_bytes;
using metaguard_test::TempDir;

class ValidationTest : public testing::Test {
protected:
  // Writes `bytes` to a file and expects opening it to fail with a message
  // that names the file and contains every one of `texts`.
  void expect_open_error(const std::string &bytes, std::vector<std::string> texts,
                         const metaguard::SafetensorsOptions &options = {}) {
    const auto path = dir_ / "bad.safetensors";
    metaguard_test::write_bytes(path, bytes);
    try {
      SafetensorsFile file(path, options);
      FAIL() << "opened without error; expected: " << texts.front();
    } catch (const FormatError &e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(path.string()), std::string::npos) << what;
      for (const auto &text : texts)
        EXPECT_NE(what.find(text), std::string::npos) << "missing '" << text << "' in: " << what;
    }
  }
  TempDir dir_;
};

std::string f32_entry(const std::string &name, const std::string &shape, int begin, int end) {
  return "\"" + name + R"(":{"dtype":"F32","shape":)" + shape + R"(,"data_offsets":[)" +
         std::to_string(begin) + "," + std::to_string(end) + "]}";
}

TEST_F(ValidationTest, FileShorterThanTheLengthField) {
  expect_open_error("abc", {"3 bytes long, too short for the 8-byte header length"});
  expect_open_error("", {"0 bytes long"});
}

TEST_F(ValidationTest, GitLfsPointerIsRecognised) {
  expect_open_error("version https://git-lfs.github.com/spec/v1\n"
                    "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
                    "size 548105171\n",
                    {"git-lfs pointer file", "git lfs pull"});
}

TEST_F(ValidationTest, HeaderLengthAboveTheCap) {
  expect_open_error(metaguard_test::length_prefix(200'000'000) + "{}",
                    {"header length 200000000 exceeds the limit of 100000000"});
  // The cap is configurable: a valid file fails under a tiny cap.
  const std::string valid = safetensors_bytes("{" + f32_entry("a", "[1]", 0, 4) + "}", le_bytes(1.0f));
  metaguard::SafetensorsOptions tight;
  tight.max_header_size = 16;
  expect_open_error(valid, {"exceeds the limit of 16 bytes"}, tight);
  metaguard_test::write_bytes(dir_ / "ok.safetensors", valid);
  EXPECT_NO_THROW(SafetensorsFile(dir_ / "ok.safetensors"));
}

TEST_F(ValidationTest, HeaderLengthPastTheEndOfTheFile) {
  expect_open_error(metaguard_test::length_prefix(1000) + "{}",
                    {"header length 1000 runs past the end of the file (10 bytes)"});
  // 8 + (2^63-1) must not wrap around in the comparison.
  metaguard::SafetensorsOptions unlimited;
  unlimited.max_header_size = std::numeric_limits<std::int64_t>::max();
  expect_open_error(metaguard_test::length_prefix(std::numeric_limits<std::int64_t>::max()) + "{}",
                    {"runs past the end"}, unlimited);
  expect_open_error(metaguard_test::length_prefix(~std::uint64_t{0}) + "{}", {"exceeds the limit"},
                    unlimited);
}

TEST_F(ValidationTest, HeaderMustBeUtf8) {
  expect_open_error(safetensors_bytes("{\"a\xff\":1}", ""), {"header is not valid UTF-8 (byte 11 of the file)"});
  // An overlong encoding of '/' is not UTF-8 either.
  expect_open_error(safetensors_bytes("{\"\xc0\xaf\":1}", ""), {"not valid UTF-8"});
  // A UTF-16 surrogate encoded in UTF-8 is invalid.
  expect_open_error(safetensors_bytes("{\"\xed\xa0\x80\":1}", ""), {"not valid UTF-8"});
}

TEST_F(ValidationTest, HeaderMustBeAJsonObject) {
  expect_open_error(safetensors_bytes("{nope", ""), {"header is not usable JSON", "parse error"});
  expect_open_error(safetensors_bytes("[1, 2]", ""), {"header is not a JSON object"});
  expect_open_error(safetensors_bytes(std::string(200, '[') + std::string(200, ']'), ""),
                    {"nested deeper than"});
}

TEST_F(ValidationTest, DuplicateTensorNames) {
  expect_open_error(safetensors_bytes("{" + f32_entry("a", "[1]", 0, 4) + "," +
                                          f32_entry("a", "[1]", 4, 8) + "}",
                                      le_bytes(1.0f) + le_bytes(2.0f)),
                    {"duplicate key \"a\""});
}

TEST_F(ValidationTest, MetadataMustMapStringsToStrings) {
  expect_open_error(safetensors_bytes(R"({"__metadata__":{"format":"pt","n":1}})", ""),
                    {"__metadata__ value of \"n\" must be a string, found number 1"});
  expect_open_error(safetensors_bytes(R"({"__metadata__":["pt"]})", ""),
                    {"__metadata__ must be an object of strings"});
  metaguard_test::write_bytes(dir_ / "null.safetensors", safetensors_bytes(R"({"__metadata__":null})", ""));
  EXPECT_TRUE(SafetensorsFile(dir_ / "null.safetensors").metadata().empty());
}

TEST_F(ValidationTest, TensorEntriesNeedEveryField) {
  expect_open_error(safetensors_bytes(R"({"a":{"dtype":"F32","data_offsets":[0,4]}})", le_bytes(1.0f)),
                    {"tensor 'a': header entry has no \"shape\""});
  expect_open_error(safetensors_bytes(R"({"a":[1]})", ""), {"tensor 'a': header entry is not a JSON object"});
  expect_open_error(safetensors_bytes(R"({"a":{"dtype":7,"shape":[],"data_offsets":[0,0]}})", ""),
                    {"tensor 'a': \"dtype\" is not a string"});
  expect_open_error(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", ""),
                    {"tensor 'a': \"shape\" must hold non-negative integers", "-1"});
  expect_open_error(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0.0,4]}})", ""),
                    {"tensor 'a': \"data_offsets\" must hold non-negative integers"});
  expect_open_error(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", ""),
                    {"tensor 'a': \"data_offsets\" is not an array [begin, end]"});
}

TEST_F(ValidationTest, UnknownDtypeNamesTensorAndDtype) {
  expect_open_error(safetensors_bytes(R"({"a":{"dtype":"X9","shape":[1],"data_offsets":[0,1]}})", "z"),
                    {"tensor 'a': unknown dtype 'X9'"});
}

TEST_F(ValidationTest, TensorsMustStartAtZeroWithoutGapsOrOverlaps) {
  expect_open_error(safetensors_bytes("{" + f32_entry("a", "[1]", 4, 8) + "}", std::string(8, '\0')),
                    {"tensor 'a': data_offsets [4, 8] leave a gap: data bytes [0, 4) belong to no tensor"});
  expect_open_error(safetensors_bytes("{" + f32_entry("a", "[1]", 0, 4) + "," +
                                          f32_entry("b", "[1]", 8, 12) + "}",
                                      std::string(12, '\0')),
                    {"tensor 'b'", "leave a gap: data bytes [4, 8)"});
  expect_open_error(safetensors_bytes("{" + f32_entry("a", "[2]", 0, 8) + "," +
                                          f32_entry("b", "[1]", 4, 8) + "}",
                                      std::string(8, '\0')),
                    {"tensor 'b': data_offsets [4, 8] overlap tensor 'a', which ends at 8"});
  expect_open_error(safetensors_bytes("{" + f32_entry("a", "[1]", 8, 4) + "}", std::string(8, '\0')),
                    {"tensor 'a': data_offsets [8, 4] end before they begin"});
}

TEST_F(ValidationTest, SliceSizeMustMatchShapeAndDtype) {
  expect_open_error(safetensors_bytes("{" + f32_entry("a", "[3]", 0, 8) + "}", std::string(8, '\0')),
                    {"tensor 'a': shape [3] of F32 needs 12 bytes but data_offsets [0, 8] hold 8"});
  expect_open_error(safetensors_bytes(R"({"a":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}})", "zz"),
                    {"tensor 'a': shape [3] of F4 does not fill a whole number of bytes"});
}

TEST_F(ValidationTest, SizeArithmeticIsChecked) {
  // 2^32 * 2^32 * 4 bytes wraps to 0 in 64 bits: it must not pass as empty.
  expect_open_error(safetensors_bytes(
                        R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,4],"data_offsets":[0,0]}})", ""),
                    {"tensor 'a': shape [4294967296, 4294967296, 4] of F32 overflows 64-bit sizes"});
  expect_open_error(safetensors_bytes(
                        R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,18446744073709551615]}})", ""),
                    {"tensor 'a': \"data_offsets\" must hold non-negative integers below 2^63"});
}

TEST_F(ValidationTest, LastTensorMustEndAtTheEndOfTheFile) {
  expect_open_error(safetensors_bytes("{" + f32_entry("a", "[2]", 0, 8) + "}", std::string(6, '\0')),
                    {"tensors need 8 bytes of data but the file holds only 6", "truncated"});
  expect_open_error(safetensors_bytes("{" + f32_entry("a", "[1]", 0, 4) + "}", std::string(7, '\0')),
                    {"the file has 3 bytes after the end of the last tensor"});
}

TEST_F(ValidationTest, NotARegularFileOrMissing) {
  std::filesystem::create_directory(dir_ / "d.safetensors");
  EXPECT_THROW(
      {
        try {
          SafetensorsFile file(dir_ / "d.safetensors");
        } catch (const FormatError &e) {
          EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos);
          throw;
        }
      },
      FormatError);
  try {
    SafetensorsFile file(dir_ / "none.safetensors");
    FAIL();
  } catch (const FormatError &e) {
    EXPECT_NE(std::string(e.what()).find("cannot open: No such file or directory"), std::string::npos);
  }
}

TEST_F(ValidationTest, BoolBytesOtherThanZeroOrOneAreRejectedOnRead) {
  metaguard_test::write_bytes(dir_ / "b.safetensors",
                              safetensors_bytes(R"({"b":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}})",
                                                std::string("\x01\x02\x00", 3)));
  SafetensorsFile file(dir_ / "b.safetensors");
  try {
    file.tensor("b");
    FAIL();
  } catch (const FormatError &e) {
    EXPECT_NE(std::string(e.what()).find("tensor 'b': BOOL element 1 is byte 2"), std::string::npos)
        << e.what();
  }
}

TEST_F(ValidationTest, UnsupportedDtypesNameTensorAndDtypeOnRead) {
  metaguard_test::write_bytes(
      dir_ / "u.safetensors",
      safetensors_bytes(R"({"f8":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]},)"
                        R"("u32":{"dtype":"U32","shape":[1],"data_offsets":[2,6]},)"
                        R"("ok":{"dtype":"I8","shape":[2],"data_offsets":[6,8]}})",
                        std::string("\x01\x02\x03\x04\x05\x06\x07\x08", 8)));
  SafetensorsFile file(dir_ / "u.safetensors");
  for (const std::string name : {"f8", "u32"}) {
    try {
      file.tensor(name);
      FAIL() << name;
    } catch (const FormatError &e) {
      const std::string dtype = name == "f8" ? "F8_E4M3" : "U32";
      EXPECT_NE(std::string(e.what()).find("tensor '" + name + "': dtype " + dtype +
                                           " has no LibTorch 1.13 equivalent"),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_TRUE(torch::equal(file.tensor("ok"), torch::tensor({7, 8}, torch::kInt8)));
}

// Thousands of corrupted variants of a valid file: each one either opens and
// reads or fails with FormatError; nothing crashes or throws anything else.
TEST_F(ValidationTest, CorruptedFilesNeverCrash) {
  metaguard::save_safetensors(dir_ / "good.safetensors",
                              {{"a", torch::arange(6, torch::kFloat32)},
                               {"b", torch::tensor({true, false})},
                               {"c", torch::arange(3, torch::kInt16)}});
  const std::string good = metaguard_test::read_bytes(dir_ / "good.safetensors");
  std::mt19937 rng(1234);
  const auto path = dir_ / "fuzz.safetensors";
  int opened = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string bytes = good;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = rng() % bytes.size();
      switch (rng() % 3) {
      case 0:
        bytes[at] = static_cast<char>(rng());
        break;
      case 1:
        bytes.resize(at);
        break;
      default:
        bytes.insert(at, 1, static_cast<char>(rng()));
      }
      if (bytes.empty())
        break;
    }
    metaguard_test::write_bytes(path, bytes);
    try {
      SafetensorsFile file(path);
      ++opened;
      for (const auto &name : file.names())
        (void)file.tensor(name).sum();
    } catch (const FormatError &) {
    }
  }
  // Some edits only touch tensor bytes, so some variants still open.
  EXPECT_GT(opened, 0);
}

} // namespace safetensors_validation_test
} // namespace
