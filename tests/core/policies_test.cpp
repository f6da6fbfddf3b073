#include <gtest/gtest.h>

#include "core/policy/policies.h"

namespace colo {
namespace {

TEST(Policies, NamesAndThesisAliasesParse) {
  EXPECT_EQ(policy_kind_from_string("magm"), PolicyKind::Magm);
  EXPECT_EQ(policy_kind_from_string("owf"), PolicyKind::Magm);
  EXPECT_EQ(policy_kind_from_string("mug"), PolicyKind::BestFit);
  EXPECT_EQ(policy_kind_from_string("off"), PolicyKind::FirstFit);
  EXPECT_EQ(policy_kind_from_string("olug"), PolicyKind::Lug);
  EXPECT_EQ(policy_kind_from_string("rr"), PolicyKind::RoundRobin);
  EXPECT_FALSE(policy_kind_from_string("fastest").has_value());
  for (auto k : {PolicyKind::Exclusive, PolicyKind::RoundRobin, PolicyKind::FirstFit, PolicyKind::BestFit,
                 PolicyKind::Magm, PolicyKind::Lug})
    EXPECT_EQ(policy_kind_from_string(to_string(k)), k);
}

TEST(Policies, CompositionsMatchTheDesignTable) {
  EXPECT_EQ(make_policy(PolicyKind::Exclusive).describe(), "exclusive: idle_only -> first");
  EXPECT_EQ(make_policy(PolicyKind::RoundRobin).describe(), "round-robin: fits_memory+smact_below -> round_robin");
  EXPECT_EQ(make_policy(PolicyKind::FirstFit).describe(), "first-fit: fits_memory+smact_below -> first");
  EXPECT_EQ(make_policy(PolicyKind::BestFit).describe(), "best-fit: fits_memory+smact_below -> least_free_mem");
  EXPECT_EQ(make_policy(PolicyKind::Magm).describe(), "magm: fits_memory+smact_below -> most_free_mem");
  EXPECT_EQ(make_policy(PolicyKind::Lug).describe(), "lug: fits_memory+smact_below -> least_smact");
}

TEST(Policies, NoConditionsDropsFiltersButExclusiveStaysExclusive) {
  Conditions off;
  off.enabled = false;
  EXPECT_EQ(make_policy(PolicyKind::RoundRobin, off).describe(), "round-robin: (no conditions) -> round_robin");
  EXPECT_EQ(make_policy(PolicyKind::Exclusive, off).describe(), "exclusive: idle_only -> first");
}

}  // namespace
}  // namespace colo
