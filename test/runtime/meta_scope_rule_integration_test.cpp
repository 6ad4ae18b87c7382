// Runs the cases of test/integration/meta_scope_cases.h against the runtime:
// each Rejected case must throw MetaDeviceError and each Accepted case must
// load. The lit test integration-meta-scope-rule.test checks that the
// clang-tidy check flags exactly the Rejected ones.
#include "../integration/meta_scope_cases.h"
#include "rule_integration.h"

#include <gtest/gtest.h>

namespace {
namespace meta_scope_rule_integration_test {

namespace fs = std::filesystem;

class MetaScopeRuleIntegration : public ::testing::TestWithParam<meta_scope_cases::Case> {
protected:
  static void SetUpTestSuite() {
    root_ = metaguard_test::case_root("meta-scope-cases");
    paths_ = meta_scope_cases::make_paths(root_);
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }
  void SetUp() override { metaguard::set_policy(metaguard::Policy::Throw); }
  void TearDown() override { metaguard::reset_default_device(); }

  static fs::path root_;
  static meta_scope_cases::Paths paths_;
};

fs::path MetaScopeRuleIntegration::root_;
meta_scope_cases::Paths MetaScopeRuleIntegration::paths_;

TEST_P(MetaScopeRuleIntegration, RuntimeAgreesWithTheCaseTable) {
  metaguard_test::expect_runtime_agrees<metaguard::MetaDeviceError>(GetParam(), paths_);
}

INSTANTIATE_TEST_SUITE_P(Cases, MetaScopeRuleIntegration,
                         ::testing::ValuesIn(meta_scope_cases::cases()),
                         metaguard_test::CaseName());

} // namespace meta_scope_rule_integration_test
} // namespace
