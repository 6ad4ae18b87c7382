// Runs the cases of test/integration/offload_cases.h against the runtime:
// each Rejected case must throw OffloadError and each Accepted case must run.
// The lit test integration-offload-rule.test checks that the clang-tidy check
// flags exactly the Rejected ones.
#include "../integration/offload_cases.h"
#include "rule_integration.h"

#include <gtest/gtest.h>

namespace {
namespace offload_rule_integration_test {

namespace fs = std::filesystem;

class OffloadRuleIntegration : public ::testing::TestWithParam<offload_cases::Case> {
protected:
  static void SetUpTestSuite() {
    root_ = metaguard_test::case_root("offload-cases");
    paths_ = offload_cases::make_paths(root_);
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }
  void SetUp() override {
    metaguard::set_policy(metaguard::Policy::Throw);
    // Each case gets a folder of its own to write to.
    paths_.scratch = root_ / GetParam().name;
    fs::create_directories(paths_.scratch);
  }

  static fs::path root_;
  static offload_cases::Paths paths_;
};

fs::path OffloadRuleIntegration::root_;
offload_cases::Paths OffloadRuleIntegration::paths_;

TEST_P(OffloadRuleIntegration, RuntimeAgreesWithTheCaseTable) {
  metaguard_test::expect_runtime_agrees<metaguard::OffloadError>(GetParam(), paths_);
}

INSTANTIATE_TEST_SUITE_P(Cases, OffloadRuleIntegration,
                         ::testing::ValuesIn(offload_cases::cases()),
                         metaguard_test::CaseName());

} // namespace offload_rule_integration_test
} // namespace
