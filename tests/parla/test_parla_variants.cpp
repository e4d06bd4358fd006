// SPDX-License-Identifier: MIT
// Variants chosen by the task's device set (Parla's test_variants).
#include "parla_test_support.hpp"

using namespace parla;
using parla_test::contains;
using parla_test::thrown;

Test(variants, chosen_by_the_tasks_device_set) {
  const Arch a = parla_test::arch();
  Variants<std::string(int)> f;
  f.on({a}, [](int x) { return "one " + std::to_string(x); })
      .on({a, a}, [](int x) { return "two " + std::to_string(x); })
      .on({Arch::gpu}, [](int) { return std::string("gpu"); });
  Runtime rt(parla_test::options());
  TaskSpace T("T");
  struct Case {
    Placement placement;
    const char *expected;
  };
  const Case cases[] = {
      {a, "one 3"},
      {on(a, a), "two 3"},
      {rt.device(a, 1), "one 3"},
  };
  int i = 0;
  for (const Case &c : cases) {
    auto h = rt.spawn(T[i++], {.placement = c.placement}, [&f] { return f(3); });
    cr_expect(h.get() == c.expected, "expected %s, got %s", c.expected, h.get().c_str());
  }
}

Test(variants, a_device_set_is_a_multiset) {
  Variants<int()> f;
  f.on({Arch::cpu, Arch::gpu}, [] { return 1; });
  cr_expect(contains(thrown<Error>([&] {
                       f.on({Arch::gpu, Arch::cpu}, [] { return 2; });
                     }),
                     "a variant for {cpu, gpu} is already defined"));
}

Test(variants, a_missing_variant_is_an_error_naming_the_devices) {
  const Arch a = parla_test::arch();
  Variants<int()> f;
  f.on({Arch::accelerator}, [] { return 1; });
  Runtime rt(parla_test::options());
  TaskSpace T("T");
  auto h = rt.spawn(T[0], {.placement = on(a, a)}, [&f] { return f(); });
  const std::string e = thrown<Error>([&] { h.get(); });
  const std::string arch_name(to_string(a));
  cr_expect(contains(e, "no variant for a task on {" + arch_name + ", " + arch_name + "}"),
            "got: %s", e.c_str());
  cr_expect(!thrown<Error>([&] { rt.wait(); }).empty());
  Variants<int()> g;
  g.on({Arch::accelerator}, [] { return 1; }).otherwise([] { return 9; });
  Runtime rt2(parla_test::options());
  TaskSpace U("U");
  cr_expect_eq(rt2.spawn(U[0], [&g] { return g(); }).get(), 9, "the fallback is used");
}
