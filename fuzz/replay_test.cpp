// Replays a fuzz target's seed corpus and every regression input (crashes
// the fuzzer found, minimised) through the same entry function, compiled
// without libFuzzer: the normal test suite keeps each fixed bug fixed.
#include <gtest/gtest.h>

#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size);

namespace {

std::vector<std::filesystem::path> inputs_in(const std::filesystem::path &dir) {
  std::vector<std::filesystem::path> files;
  if (std::filesystem::is_directory(dir))
    for (const auto &entry : std::filesystem::directory_iterator(dir))
      if (entry.is_regular_file() && entry.path().filename().string().front() != '.' &&
          entry.path().filename() != "README.md")
        files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

void replay(const std::filesystem::path &file) {
  SCOPED_TRACE(file.string());
  std::ifstream in(file, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  try {
    EXPECT_EQ(LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t *>(bytes.data()), bytes.size()), 0);
  } catch (const std::exception &e) {
    ADD_FAILURE() << "an exception other than metaguard::Error escaped: " << e.what();
  } catch (...) {
    ADD_FAILURE() << "a non-std exception escaped";
  }
}

TEST(FuzzReplay, SeedCorpus) {
  const auto files = inputs_in(METAGUARD_FUZZ_CORPUS);
  ASSERT_FALSE(files.empty()) << "no seed inputs in " << METAGUARD_FUZZ_CORPUS
                              << " (run fuzz/make_corpus.py)";
  for (const auto &file : files)
    replay(file);
}

TEST(FuzzReplay, Regressions) {
  for (const auto &file : inputs_in(METAGUARD_FUZZ_REGRESSIONS))
    replay(file);
}

} // namespace
