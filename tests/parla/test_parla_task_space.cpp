// SPDX-License-Identifier: MIT
// TaskSpace indexing: elements, tuples, slices (steps, negative steps,
// several dimensions), views, bounded spaces and their errors.
#include "parla_test_support.hpp"

using namespace parla;
using parla_test::contains;
using parla_test::thrown;

namespace {
std::vector<std::string> names(const TaskRefs &refs) {
  std::vector<std::string> out;
  for (const TaskRef &r : refs)
    out.push_back(r.name());
  return out;
}
} // namespace

Test(task_space, elements_and_tuples_are_named_by_their_indices) {
  TaskSpace T("T");
  cr_expect(T[3].name() == "T[3]");
  cr_expect(T(1, 2).name() == "T[1,2]");
  cr_expect(T(1, 2, 3, 4).name() == "T[1,2,3,4]");
  cr_expect((T[Index{5, 6}].name() == "T[5,6]"));
  cr_expect(T[-1].name() == "T[-1]", "an unbounded space takes any integer");
}

Test(task_space, slices_enumerate_like_python_ranges) {
  TaskSpace T("T");
  struct Case {
    TaskRefs refs;
    std::vector<std::string> expected;
  };
  const Case cases[] = {
      {T[slice(0, 3)], {"T[0]", "T[1]", "T[2]"}},
      {T[slice(1, 7, 3)], {"T[1]", "T[4]"}},
      {T[slice(3, 0, -1)], {"T[3]", "T[2]", "T[1]"}},
      {T[slice(2, 2)], {}},
      {T(slice(0, 2), slice(5, 7)), {"T[0,5]", "T[0,6]", "T[1,5]", "T[1,6]"}},
      {T(1, slice(0, 2)), {"T[1,0]", "T[1,1]"}},
      {TaskRefs{T[9], T[slice(0, 2)]}, {"T[9]", "T[0]", "T[1]"}},
  };
  for (const Case &c : cases)
    cr_expect(names(c.refs) == c.expected, "got %zu names", c.refs.size());
}

Test(task_space, a_view_prefixes_its_indices) {
  TaskSpace T("T");
  TaskSpace row = T.view(2);
  cr_expect(row[5].name() == "T[2,5]");
  cr_expect(row.view(1)[0].name() == "T[2,1,0]");
  Runtime rt(parla_test::options());
  rt.spawn(row[5], [] { return 1; });
  cr_expect_eq(rt.get<int>(T(2, 5)), 1, "the view and the space name the same task");
  cr_expect_eq(T.spawned(), 1u);
}

Test(task_space, bounded_spaces_check_indices_and_end_slices) {
  TaskSpace T("T", {2, 3});
  cr_expect(names(T(1, all())) == (std::vector<std::string>{"T[1,0]", "T[1,1]", "T[1,2]"}));
  cr_expect_eq(T(all(), all()).size(), 6u);
  struct Case {
    std::function<void()> f;
    const char *message;
  };
  const Case cases[] = {
      {[&] { (void)T(2, 0); }, "T[2,0] is outside the shape [2,3] of T"},
      {[&] { (void)T(0, -1); }, "T[0,-1] is outside the shape"},
      {[&] { (void)T[0]; }, "T[0] is outside the shape"},
      {[&] { (void)TaskSpace("U")[all()]; }, "a slice to the end needs a bounded space"},
      {[&] { (void)T(slice(0, 2, 0), 1); }, "step 0"},
      {[&] { TaskSpace("V", {-1}); }, "negative dimension"},
      {[&] {
         (void)TaskSpace("W")[Index{1, 2}].name(), (void)TaskSpace("W").view(Index{1, 2, 3})(4, 5);
       },
       "at most 4 components"},
  };
  for (const Case &c : cases) {
    const std::string e = thrown<Error>(c.f);
    cr_expect(contains(e, c.message), "expected \"%s\", got \"%s\"", c.message, e.c_str());
  }
}

Test(task_space, a_space_belongs_to_one_runtime_at_a_time) {
  TaskSpace T("T");
  {
    Runtime a(parla_test::options());
    a.spawn(T[0], [] {});
    Runtime b(parla_test::options());
    const std::string e = thrown<Error>([&] { b.spawn(T[1], [] {}); });
    cr_expect(contains(e, "in use by another runtime"), "got: %s", e.c_str());
  }
  Runtime c(parla_test::options());
  c.spawn(T[0], [] {}); // the first runtime is gone: the space is free again
  c.wait(T);
  cr_expect_eq(T.spawned(), 1u);
}
