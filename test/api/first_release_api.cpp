// An application written against metaguard's first release (0.1.0), in the
// forms that release documented and later releases changed: it must keep
// compiling (deprecated forms warn) and behave as it did. A change that breaks
// it breaks applications: it needs a changelog entry and a version bump
// (docs/contributing.md, "Versions and compatibility").
#include <metaguard/checkpoint.h>
#include <metaguard/metaguard.h>
#include <metaguard/safetensors_weights_map.h>

#include <torch/torch.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <iostream>
#include <string>

namespace fs = std::filesystem;

namespace {

int failures = 0;

void expect(bool ok, const std::string &what) {
  if (!ok) {
    std::cerr << "first-release API: FAILED: " << what << "\n";
    ++failures;
  }
}

// A fresh folder of its own, removed when the program ends.
struct TemporaryFolder {
  fs::path path;
  TemporaryFolder() {
    auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
    path = fs::temp_directory_path() / ("metaguard-first-release-" + std::to_string(stamp));
    fs::create_directories(path);
  }
  ~TemporaryFolder() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

// 0.1.0's FormatError took the message only.
void format_error_from_a_message(const fs::path &folder) {
  try {
    throw metaguard::FormatError("no parameters in " + folder.string());
  } catch (const metaguard::FormatError &error) {
    expect(std::string(error.what()) == "no parameters in " + folder.string(), "FormatError keeps its message");
    expect(error.kind() == metaguard::FormatError::Kind::malformed, "a message-only FormatError is malformed");
  }
  try {
    throw metaguard::FormatError("a C string");
  } catch (const metaguard::Error &error) {
    expect(std::string(error.what()) == "a C string", "FormatError from a C string, caught as Error");
  }
}

// 0.1.0's SafetensorsCheckpoint::files() returned the opened files, and
// SafetensorsWeightsMap::checkpoint() the SafetensorsCheckpoint.
void safetensors_reading(const fs::path &folder) {
  torch::Tensor weight = torch::arange(6, torch::kFloat).reshape({2, 3});
  metaguard::save_safetensors(folder / "model.safetensors", {{"layer.weight", weight}});

  metaguard::SafetensorsCheckpoint checkpoint(folder);
  const std::vector<metaguard::SafetensorsFile> &files = checkpoint.files();
  expect(files.size() == 1 && files.front().path().filename() == "model.safetensors",
         "SafetensorsCheckpoint::files() lists the opened file");
  expect(files.front().tensor("layer.weight").equal(weight), "a file of files() reads its tensor");

  metaguard::SafetensorsWeightsMap weights(folder);
  expect(weights.contains("layer.weight") && weights.load("layer.weight").equal(weight),
         "SafetensorsWeightsMap loads the tensor");
  const metaguard::SafetensorsCheckpoint &same = weights.checkpoint();
  expect(same.file_of("layer.weight").info("layer.weight").shape == std::vector<std::int64_t>{2, 3},
         "SafetensorsWeightsMap::checkpoint() is the SafetensorsCheckpoint");
  std::shared_ptr<const metaguard::WeightsMap> as_base =
      std::make_shared<metaguard::SafetensorsWeightsMap>(std::make_shared<const metaguard::SafetensorsCheckpoint>(folder));
  expect(as_base->names() == std::vector<std::string>{"layer.weight"}, "SafetensorsWeightsMap is a WeightsMap");
}

// 0.1.0's PreTrainedModel inherited torch::nn::Module(std::string name).
struct NamedModel : metaguard::PreTrainedModel {
  NamedModel() : metaguard::PreTrainedModel("NamedModel") {}
};

void module_names() { expect(NamedModel().name() == "NamedModel", "PreTrainedModel(\"name\") names the module"); }

// 0.1.0's checkpoint.h brought <future> along.
void futures_through_checkpoint_h() {
  std::future<int> answer = std::async(std::launch::deferred, [] { return 42; });
  expect(answer.get() == 42, "std::future through metaguard's headers");
}

} // namespace

int main() {
  TemporaryFolder folder;
  format_error_from_a_message(folder.path);
  safetensors_reading(folder.path);
  module_names();
  futures_through_checkpoint_h();
  if (failures != 0)
    return 1;
  std::cout << "first-release API: ok\n";
  return 0;
}
