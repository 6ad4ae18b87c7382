#include <metaguard/metaguard.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace {
namespace policy_test {

TEST(PolicyTest, ParsesEveryNameCaseInsensitively) {
  EXPECT_EQ(metaguard::parse_policy("throw"), metaguard::Policy::Throw);
  EXPECT_EQ(metaguard::parse_policy("ABORT"), metaguard::Policy::Abort);
  EXPECT_EQ(metaguard::parse_policy("Warn"), metaguard::Policy::Warn);
  EXPECT_EQ(metaguard::parse_policy("off"), metaguard::Policy::Off);
  EXPECT_THROW(metaguard::parse_policy("ignore"), metaguard::Error);
}

TEST(PolicyTest, SetPolicyChangesEnforcement) {
  const auto saved = metaguard::policy();
  metaguard::set_policy(metaguard::Policy::Throw);
  EXPECT_THROW(metaguard::detail::enforce(metaguard::MetaDeviceError("x")),
               metaguard::MetaDeviceError);
  metaguard::set_policy(metaguard::Policy::Warn);
  testing::internal::CaptureStderr();
  metaguard::detail::enforce(metaguard::MetaDeviceError("loaded under meta"));
  EXPECT_NE(testing::internal::GetCapturedStderr().find("loaded under meta"), std::string::npos);
  metaguard::set_policy(metaguard::Policy::Off);
  testing::internal::CaptureStderr();
  metaguard::detail::enforce(metaguard::MetaDeviceError("silent"));
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  metaguard::set_policy(saved);
}

TEST(PolicyDeathTest, AbortPolicyAbortsWithTheMessage) {
  EXPECT_DEATH(
      {
        metaguard::set_policy(metaguard::Policy::Abort);
        metaguard::detail::enforce(metaguard::OffloadError("hook is gone"));
      },
      "hook is gone");
}

// The environment is read once per process, so each case runs in a child
// process (a death test) with its own METAGUARD_POLICY.
void exit_with_policy_from_env(const char *value) {
  setenv("METAGUARD_POLICY", value, 1);
  std::exit(static_cast<int>(metaguard::policy()));
}

TEST(PolicyDeathTest, EnvironmentSetsTheInitialPolicy) {
  // "threadsafe" re-executes the binary, so the child's policy is not yet
  // initialised and must come from its environment.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(exit_with_policy_from_env("warn"), testing::ExitedWithCode(2), "");
  EXPECT_EXIT(exit_with_policy_from_env("OFF"), testing::ExitedWithCode(3), "");
  EXPECT_EXIT(exit_with_policy_from_env("abort"), testing::ExitedWithCode(1), "");
  EXPECT_EXIT(exit_with_policy_from_env("bogus"), testing::ExitedWithCode(0),
              "METAGUARD_POLICY value 'bogus'");
}

} // namespace policy_test
} // namespace
