// Many threads at once loading, scoping, dispatching different models and
// running offloaded forwards, some on one shared model: device scopes are
// per-thread, the default device per-process, and the hook registry shared.
// Run under ThreadSanitizer by tools/run-tsan.sh; in the normal build it
// checks the same results without the race detector.
#include "loading_test_util.h"
#include "tiny_lm.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace {
namespace concurrency_test {

namespace fs = std::filesystem;

constexpr int kThreads = 4;
constexpr int kRounds = 2;

class ConcurrencyTest : public ::testing::Test {
protected:
  void SetUp() override {
    // LibTorch's own intra-op thread pool is not what this test is about
    // (and is not instrumented for TSan): one thread per operator.
    torch::set_num_threads(1);
    torch::manual_seed(11);
    metaguard::save_pretrained(reference_, dir_ / "checkpoint");
    ids_ = torch::randint(0, 50, {2, 5}, torch::kLong);
    torch::NoGradGuard no_grad;
    expected_ = reference_.forward(ids_);
  }

  // Runs body(thread index) on kThreads threads at once; a failure inside
  // is recorded by gtest on that thread.
  template <class Body> void run_threads(Body body) {
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        ++ready;
        while (ready.load() < kThreads)
          std::this_thread::yield();
        body(t);
      });
    for (auto &thread : threads)
      thread.join();
  }

  static metaguard::DeviceMap half_on_disk() {
    return {{"", "cpu"}, {"blocks.2", "disk"}, {"blocks.3", "disk"}};
  }

  metaguard_test::TempDir dir_;
  tiny::TinyLM reference_{50, 16, 4};
  torch::Tensor ids_, expected_;
};

TEST_F(ConcurrencyTest, ScopesArePerThreadAndTheDefaultDeviceIsShared) {
  metaguard::set_default_device("cpu");
  std::atomic<int> in_scope{0};
  run_threads([&](int t) {
    for (int round = 0; round < 200; ++round) {
      if ((t + round) % 2 == 0) {
        auto guard = metaguard::init_empty_weights();
        ++in_scope;
        EXPECT_TRUE(metaguard::meta_device_active());
        EXPECT_TRUE(metaguard::tensor_options().device().is_meta());
        {
          metaguard::DeviceScope inner(torch::kCPU);
          EXPECT_FALSE(metaguard::meta_device_active());
        }
        EXPECT_TRUE(metaguard::meta_device_active());
        --in_scope;
      } else {
        // Other threads' meta scopes never leak into this one.
        EXPECT_FALSE(metaguard::meta_device_active());
        EXPECT_EQ(metaguard::ambient_device(), torch::Device(torch::kCPU));
        metaguard::set_default_device("cpu");
      }
    }
  });
  EXPECT_EQ(in_scope.load(), 0);
  metaguard::reset_default_device();
  EXPECT_FALSE(metaguard::default_device().has_value());
}

TEST_F(ConcurrencyTest, ThreadsLoadDispatchAndRunTheirOwnModels) {
  run_threads([&](int t) {
    torch::NoGradGuard no_grad;
    for (int round = 0; round < kRounds; ++round) {
      // A skeleton under this thread's meta scope, loaded after it ends.
      std::unique_ptr<tiny::TinyLM> skeleton;
      {
        auto guard = metaguard::init_empty_weights();
        skeleton = std::make_unique<tiny::TinyLM>(50, 16, 4);
        tiny::make_meta(*skeleton);
        EXPECT_THROW(metaguard::load_weights(*skeleton, dir_ / "checkpoint"), metaguard::MetaDeviceError);
      }
      metaguard::LoadOptions options;
      options.device_map = half_on_disk();
      metaguard::load_weights(*skeleton, dir_ / "checkpoint", options);
      EXPECT_TRUE(metaguard::has_offloaded_parameters(*skeleton));
      EXPECT_TRUE(torch::equal(skeleton->forward(ids_), expected_)) << "thread " << t;
      EXPECT_TRUE(torch::equal(metaguard::load_offloaded_parameter(*skeleton, "blocks.2.attn.weight"),
                               reference_.blocks[2]->as<tiny::BlockImpl>()->attn->weight));

      // An in-memory model dispatched into this thread's own offload folder.
      tiny::TinyLM model(50, 16, 4);
      tiny::copy_parameters(reference_, model);
      const fs::path folder = dir_ / ("offload-" + std::to_string(t) + "-" + std::to_string(round));
      metaguard::dispatch_model(model, half_on_disk(), folder);
      EXPECT_TRUE(torch::equal(model.forward(ids_), expected_)) << "thread " << t;
      metaguard::verify_dispatch(model);
      // A hook removed on this thread's model leaves the other threads' alone.
      metaguard::remove_hook_from_module(*model.blocks[3], /*recurse=*/true);
      EXPECT_THROW(metaguard::verify_dispatch(model), metaguard::OffloadError);
      metaguard::verify_dispatch(*skeleton);
    }
  });
}

TEST_F(ConcurrencyTest, ThreadsRunForwardsOfOneSharedOffloadedModel) {
  tiny::TinyLM shared(50, 16, 4);
  tiny::copy_parameters(reference_, shared);
  metaguard::dispatch_model(shared, {{"", "cpu"}, {"blocks", "disk"}, {"head", "disk"}}, dir_ / "shared");
  run_threads([&](int t) {
    torch::NoGradGuard no_grad;
    for (int round = 0; round < 4 * kRounds; ++round) {
      EXPECT_TRUE(torch::equal(shared.forward(ids_), expected_)) << "thread " << t;
      EXPECT_TRUE(torch::equal(metaguard::parameter_value(shared, "head.weight"), reference_.head->weight));
    }
  });
  // Every guard has ended: the offloaded parameters are meta again.
  for (const auto &item : shared.named_parameters(true)) {
    if (item.key().rfind("blocks", 0) == 0 || item.key().rfind("head", 0) == 0) {
      EXPECT_TRUE(item.value().is_meta()) << item.key();
    }
  }
  metaguard::verify_dispatch(shared);
}

} // namespace concurrency_test
} // namespace
