// save_pretrained is crash-consistent as a whole: whatever step the process
// dies at (every create, write, fsync, rename, unlink and directory sync is
// a step), the folder loads either the old checkpoint or the new one,
// complete, and the next save leaves exactly the new checkpoint's files. A
// failing step (a full disk: ENOSPC) gives a FormatError and leaves the old
// checkpoint byte for byte, with no temporary left behind.
#include <metaguard/metaguard.h>

#include "io/posix_file.h"
#include "loading_test_util.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cerrno>
#include <sys/wait.h>
#include <unistd.h>

namespace {
namespace save_crash_test {

using metaguard::FormatError;
using metaguard_test::TempDir;
using metaguard_test::files_in;

// Three parameters (a 400 B, b 400 B, c 1200 B) filled from `seed`.
struct ThreeImpl : torch::nn::Module {
  explicit ThreeImpl(float seed) {
    a = register_parameter("a", torch::arange(100, torch::kFloat32) + seed);
    b = register_parameter("b", torch::arange(100, torch::kFloat32) * 2 + seed);
    c = register_parameter("c", torch::arange(300, torch::kFloat32) * 3 + seed);
  }
  torch::Tensor a, b, c;
};
TORCH_MODULE(Three);

// Counts disk steps and acts on the N-th one.
int g_step = 0;
int g_target = 0;
enum class Fault { Count, Crash, NoSpace } g_fault = Fault::Count;

int on_step(const char *, const std::filesystem::path &) {
  if (++g_step != g_target)
    return 0;
  if (g_fault == Fault::Crash)
    ::_exit(0); // dies mid-save, as a killed process would: no cleanup runs
  return g_fault == Fault::NoSpace ? ENOSPC : 0;
}

struct Hook {
  Hook(Fault fault, int target) {
    g_step = 0;
    g_target = target;
    g_fault = fault;
    metaguard::detail::set_disk_step_hook(on_step);
  }
  ~Hook() { metaguard::detail::set_disk_step_hook(nullptr); }
};

struct Scenario {
  const char *name;
  std::int64_t old_shard, new_shard; // max_shard_size: 100000 = one file, 1000 = two shards, 500 = three
};

class SaveCrashTest : public testing::TestWithParam<Scenario> {
protected:
  Three old_{1.0f}, new_{100.0f};

  void save(const Three &model, const std::filesystem::path &dir, std::int64_t shard) {
    metaguard::SaveOptions options;
    options.max_shard_size = shard;
    // The config differs between the two saves, so a load can tell which
    // save's config.json it sees.
    options.config = {{"kind", "three"}, {"saved", &model == &old_ ? "old" : "new"}};
    metaguard::save_pretrained(*model, dir, options);
  }
  // "old", "new", or what went wrong.
  std::string loads_as(const std::filesystem::path &dir) {
    Three loaded(0.0f);
    try {
      metaguard::load_weights(*loaded, dir);
    } catch (const std::exception &e) {
      return std::string("no valid checkpoint: ") + e.what();
    }
    auto same = [&](const Three &m) {
      return torch::equal(loaded->a, m->a) && torch::equal(loaded->b, m->b) && torch::equal(loaded->c, m->c);
    };
    const std::string weights = same(old_) ? "old" : same(new_) ? "new" : "a mix of old and new tensors";
    std::string config;
    try {
      config = metaguard::load_config(dir).value("saved", "");
    } catch (const std::exception &e) {
      return weights + " weights, no config: " + e.what();
    }
    return config == weights ? weights : weights + " weights with the " + config + " config";
  }
  int count_steps() {
    TempDir dir;
    save(old_, dir.path(), GetParam().old_shard);
    Hook hook(Fault::Count, 0);
    save(new_, dir.path(), GetParam().new_shard);
    return g_step;
  }
  // The folder after a clean save of the new model over the old one.
  std::vector<std::string> clean_result() {
    TempDir dir;
    save(old_, dir.path(), GetParam().old_shard);
    save(new_, dir.path(), GetParam().new_shard);
    return files_in(dir.path());
  }
};

TEST_P(SaveCrashTest, ACrashAtAnyStepLeavesTheOldOrTheNewCheckpoint) {
  const int steps = count_steps();
  ASSERT_GT(steps, 5);
  const auto clean = clean_result();
  bool seen_new = false;
  for (int n = 1; n <= steps; ++n) {
    SCOPED_TRACE("crash at disk step " + std::to_string(n) + " of " + std::to_string(steps));
    TempDir dir;
    save(old_, dir.path(), GetParam().old_shard);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      Hook hook(Fault::Crash, n);
      try {
        save(new_, dir.path(), GetParam().new_shard);
      } catch (...) {
        ::_exit(2);
      }
      ::_exit(3);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child did not die at the step";
    const std::string state = loads_as(dir.path());
    EXPECT_TRUE(state == "old" || state == "new") << state << "; files: " << testing::PrintToString(files_in(dir.path()));
    if (seen_new) {
      EXPECT_EQ(state, "new") << "once the new checkpoint is published, it stays";
    }
    seen_new = seen_new || state == "new";
    // Whatever the crash left, the next save leaves the new checkpoint only.
    save(new_, dir.path(), GetParam().new_shard);
    EXPECT_EQ(loads_as(dir.path()), "new");
    const auto after = files_in(dir.path());
    EXPECT_EQ(after.size(), clean.size()) << testing::PrintToString(after);
    for (const auto &name : after)
      EXPECT_NE(name[0], '.') << "a temporary was left: " << name;
  }
  EXPECT_TRUE(seen_new) << "no step published the new checkpoint";
}

TEST_P(SaveCrashTest, AFullDiskAtAnyStepIsAnErrorAndChangesNothing) {
  const int steps = count_steps();
  for (int n = 1; n <= steps; ++n) {
    SCOPED_TRACE("ENOSPC at disk step " + std::to_string(n) + " of " + std::to_string(steps));
    TempDir dir;
    save(old_, dir.path(), GetParam().old_shard);
    const auto before = files_in(dir.path());
    std::map<std::string, std::string> bytes;
    for (const auto &name : before)
      bytes[name] = metaguard_test::read_bytes(dir / name);
    std::string error;
    {
      Hook hook(Fault::NoSpace, n);
      try {
        save(new_, dir.path(), GetParam().new_shard);
      } catch (const FormatError &e) {
        error = e.what();
      }
    }
    const std::string state = loads_as(dir.path());
    if (error.empty()) {
      // Only the best-effort steps after the commit (directory syncs, removing
      // the old files) may fail without an error; the new checkpoint is in.
      EXPECT_EQ(state, "new");
      continue;
    }
    EXPECT_NE(error.find("No space left on device"), std::string::npos) << error;
    EXPECT_NE(error.find(dir.path().string()), std::string::npos) << error;
    if (error.find("saved the weights") != std::string::npos) {
      // config.json is replaced right after the weights' commit point.
      EXPECT_NE(error.find("config.json could not be replaced"), std::string::npos) << error;
      EXPECT_EQ(state, "new");
      continue;
    }
    EXPECT_EQ(state, "old");
    EXPECT_EQ(files_in(dir.path()), before) << "a temporary or new file was left";
    for (const auto &[name, content] : bytes)
      EXPECT_EQ(metaguard_test::read_bytes(dir / name), content) << name << " changed";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Transitions, SaveCrashTest,
    testing::Values(Scenario{"single_to_single", 100000, 100000}, Scenario{"single_to_sharded", 100000, 1000},
                    Scenario{"sharded_to_same_shards", 1000, 1000}, Scenario{"sharded_to_more_shards", 1000, 500},
                    Scenario{"sharded_to_single", 500, 100000}),
    [](const testing::TestParamInfo<Scenario> &info) { return std::string(info.param.name); });

TEST(SaveCrashRuleTest, AFolderWithBothASingleFileAndAnIndexLoadsTheSingleFile) {
  // What a crash between publishing and cleaning up can leave: the rule is
  // that model.safetensors wins, so save_pretrained publishes in that order.
  TempDir sharded, both;
  Three one(1.0f), two(2.0f);
  metaguard::save_pretrained(*one, sharded.path(), {1000});
  for (const auto &name : files_in(sharded.path()))
    std::filesystem::copy_file(sharded / name, both / name);
  metaguard::save_safetensors(both / "model.safetensors", {{"a", two->a}, {"b", two->b}, {"c", two->c}});
  Three loaded(0.0f);
  metaguard::load_weights(*loaded, both.path());
  EXPECT_TRUE(torch::equal(loaded->c, two->c));
}

TEST(SaveCrashRuleTest, LeftoverTemporariesAndUnnamedShardsAreIgnoredAndCleanedUp) {
  TempDir dir;
  Three one(1.0f), two(2.0f);
  metaguard::save_pretrained(*one, dir.path(), {1000});
  const auto clean = files_in(dir.path());
  // A save that died: a half-written temporary of a dead process and a
  // complete shard that no index names.
  metaguard_test::write_bytes(dir / ".model.safetensors.index.json.tmp-999999-0", "{\"weight_m");
  metaguard::save_safetensors(dir / "model-00003-of-00003.safetensors", {{"a", two->a}});
  Three loaded(0.0f);
  metaguard::load_weights(*loaded, dir.path());
  EXPECT_TRUE(torch::equal(loaded->a, one->a));
  metaguard::save_pretrained(*two, dir.path(), {1000});
  const auto after = files_in(dir.path());
  EXPECT_EQ(after.size(), clean.size()) << testing::PrintToString(after);
  metaguard::load_weights(*loaded, dir.path());
  EXPECT_TRUE(torch::equal(loaded->c, two->c));
}

// The config the commit carries is used only when a save died before
// config.json's rename; otherwise config.json is what a load reads.
class CommittedConfigTest : public testing::TestWithParam<std::int64_t> {
protected:
  TempDir dir;
  void SetUp() override {
    metaguard::SaveOptions options;
    options.max_shard_size = GetParam();
    options.config = {{"kind", "three"}, {"saved", "by save_pretrained"}};
    metaguard::save_pretrained(*Three(1.0f), dir.path(), options);
  }
};

TEST_P(CommittedConfigTest, AConfigEditedByHandAfterTheSaveIsRead) {
  metaguard_test::write_bytes(dir / "config.json", R"({"kind": "three", "saved": "edited"})");
  EXPECT_EQ(metaguard::load_config(dir.path())["saved"], "edited");
}

TEST_P(CommittedConfigTest, AMissingConfigIsAnErrorUnlessASaveDiedBeforeRenamingIt) {
  const std::string committed = metaguard_test::read_bytes(dir / "config.json");
  std::filesystem::remove(dir / "config.json");
  EXPECT_THROW(metaguard::load_config(dir.path()), metaguard::FormatError) << "removed by hand";
  metaguard_test::write_bytes(dir / ".config.json.tmp-999999-1", committed);
  EXPECT_EQ(metaguard::load_config(dir.path())["saved"], "by save_pretrained");
}

TEST_P(CommittedConfigTest, AStaleConfigBesideTheDeadSavesTemporaryIsReplacedByTheCommittedOne) {
  const std::string committed = metaguard_test::read_bytes(dir / "config.json");
  metaguard_test::write_bytes(dir / "config.json", R"({"kind": "three", "saved": "previous save"})");
  metaguard_test::write_bytes(dir / ".config.json.tmp-999999-1", committed);
  EXPECT_EQ(metaguard::load_config(dir.path())["saved"], "by save_pretrained");
  metaguard_test::write_bytes(dir / ".config.json.tmp-999999-1", R"({"other": 1})");
  EXPECT_EQ(metaguard::load_config(dir.path())["saved"], "previous save")
      << "a temporary that does not hold the committed text proves nothing";
}

INSTANTIATE_TEST_SUITE_P(SingleAndSharded, CommittedConfigTest, testing::Values(100000, 1000),
                         [](const testing::TestParamInfo<std::int64_t> &info) {
                           return info.param == 1000 ? std::string("sharded") : std::string("single");
                         });

} // namespace save_crash_test
} // namespace
