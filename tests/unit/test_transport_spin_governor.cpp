// SPDX-License-Identifier: MIT
// SpinGovernor: how long a waiter spins, as its recent waits ended (spins
// that keep ending in sleep go short for a while, then the full budget is
// tried again).
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <chrono>
#include <cstdint>

#include "transport/spin_governor.hpp"

using ava::SpinGovernor;
using std::chrono::nanoseconds;

namespace {

constexpr nanoseconds kBudget{20000};

// Waits one after the other, each ending in sleep (s) or while it spun (r),
// and the budget each gets: the full one (F) or the short spin (S).
struct Case {
  char name[40];
  char outcomes[16];
  char budgets[16];
};

} // namespace

ParameterizedTestParameters(spin_governor, sequences) {
  static Case cases[] = {
      {"spins that pay stay full", "rrrr", "FFFF"},
      {"one sleep is not enough", "srsr", "FFFF"},
      {"two sleeps in a row go short", "ssr", "FFS"},
      {"a spin that pays resets the count", "srssr", "FFFFS"},
      {"short waits do not count", "sssr", "FFSS"},
  };
  return cr_make_param_array(Case, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(Case *c, spin_governor, sequences) {
  SpinGovernor gov(kBudget);
  for (size_t i = 0; c->outcomes[i] != '\0'; ++i) {
    bool full = false;
    const nanoseconds budget = gov.next(&full);
    const char got = full ? 'F' : 'S';
    cr_expect_eq(got, c->budgets[i], "%s: wait %zu got %c", c->name, i, got);
    cr_expect_eq(budget.count(), full ? kBudget.count() : SpinGovernor::kShortSpin.count());
    gov.ended(full, c->outcomes[i] == 's');
  }
}

Test(spin_governor, the_full_budget_comes_back) {
  SpinGovernor gov(kBudget);
  bool full = false;
  for (int i = 0; i < 2; ++i) {
    gov.next(&full);
    gov.ended(full, true);
  }
  uint32_t short_waits = 0;
  for (;;) {
    const nanoseconds b = gov.next(&full);
    if (full) {
      cr_expect_eq(b.count(), kBudget.count());
      break;
    }
    cr_expect_eq(b.count(), SpinGovernor::kShortSpin.count());
    gov.ended(full, true); // sleeping while short changes nothing
    cr_assert_lt(++short_waits, 10 * SpinGovernor::kShortWaits, "never full again");
  }
  cr_expect_eq(short_waits, SpinGovernor::kShortWaits);
}

Test(spin_governor, a_budget_at_most_the_short_spin_is_always_full) {
  SpinGovernor gov(nanoseconds(1000));
  bool full = false;
  for (int i = 0; i < 5; ++i) {
    cr_expect_eq(gov.next(&full).count(), 1000);
    cr_expect(full);
    gov.ended(full, true);
  }
  SpinGovernor none(nanoseconds(0));
  cr_expect_eq(none.next(&full).count(), 0);
}
