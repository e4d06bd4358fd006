// SPDX-License-Identifier: MIT
// Runahead (Options::runahead): a task on devices with events (OpenCL)
// completes in its device's callback, and a dependent placed only on such
// devices starts while its dependency's work still runs, its queue waiting
// for that work on the device. The dependency's kernel is held back by a
// user event the test sets only once the dependent's body has run: the
// dependent's kernel must still see the dependency's result (same device:
// the in-order queue; the other device: a barrier on the dependency's
// marker, the platform's devices sharing a context). A host task and a
// coroutine never run ahead, and a dependency whose device work fails
// fails the graph without a hang. OpenCL backends only (tests/parla/
// CMakeLists.txt): host devices have no events.
#include <atomic>
#include <thread>

#include "parla_test_support.hpp"

using namespace parla;

namespace {

const char *const kSource = R"CLC(
__kernel void put(__global int *a, int v) { a[0] = v; }
__kernel void twice(__global int *a) { a[0] = a[0] * 2; }
)CLC";

Options runahead_options(bool with_host = false) {
  cr_assert(parla_test::opencl_backend(), "runahead needs devices with events, not %s",
            parla_test::backend().c_str());
  Options o = parla_test::options();
  o.runahead = true;
  if (with_host)
    for (auto &d : host_devices(1, 1, 1ull << 30))
      o.devices.push_back(std::move(d));
  return o;
}

// Waits (bounded) for a flag a body sets.
class Flag {
public:
  void set() {
    std::lock_guard lock(mu_);
    set_ = true;
    cv_.notify_all();
  }
  bool wait(std::chrono::seconds limit = std::chrono::seconds(30)) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return set_; });
  }

private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool set_ = false;
};

// One int in the platform's shared context, kernels to write it, and the
// gate that holds the first kernel back.
struct Fixture {
  explicit Fixture(Runtime &rt)
      : dev0(dynamic_cast<OpenclDevice &>(rt.device(Arch::cl_cpu, 0))),
        dev1(dynamic_cast<OpenclDevice &>(rt.device(Arch::cl_cpu, 1))) {
    cr_assert_eq(dev0.context(), dev1.context(), "the platform's devices share one context");
    cl_int e = CL_SUCCESS;
    buffer = clCreateBuffer(dev0.context(), CL_MEM_READ_WRITE, sizeof(cl_int), nullptr, &e);
    cr_assert_eq(e, CL_SUCCESS, "clCreateBuffer: %d", e);
    gate = clCreateUserEvent(dev0.context(), &e);
    cr_assert_eq(e, CL_SUCCESS, "clCreateUserEvent: %d", e);
  }
  ~Fixture() {
    clReleaseEvent(gate);
    clReleaseMemObject(buffer);
  }
  // On the task's device: a[0] = v once the gate opens.
  void put_after_gate(cl_int v) {
    auto &d = dynamic_cast<OpenclDevice &>(current_device());
    cl_kernel k = put.get(d);
    set_kernel_args(k, buffer, v);
    const size_t one = 1;
    cl_check(clEnqueueNDRangeKernel(d.queue(), k, 1, nullptr, &one, nullptr, 1, &gate, nullptr),
             "clEnqueueNDRangeKernel");
  }
  // On the task's device: a[0] *= 2, with no wait list of its own.
  void twice_now() {
    auto &d = dynamic_cast<OpenclDevice &>(current_device());
    cl_kernel k = twice.get(d);
    set_kernel_args(k, buffer);
    const size_t one = 1;
    cl_check(clEnqueueNDRangeKernel(d.queue(), k, 1, nullptr, &one, nullptr, 0, nullptr, nullptr),
             "clEnqueueNDRangeKernel");
  }
  cl_int value() {
    cl_int v = 0;
    cl_check(
        clEnqueueReadBuffer(dev0.queue(), buffer, CL_TRUE, 0, sizeof v, &v, 0, nullptr, nullptr),
        "clEnqueueReadBuffer");
    return v;
  }
  void open(cl_int status = CL_COMPLETE) {
    cr_assert_eq(clSetUserEventStatus(gate, status), CL_SUCCESS, "clSetUserEventStatus");
  }

  OpenclDevice &dev0, &dev1;
  cl_mem buffer = nullptr;
  cl_event gate = nullptr;
  KernelCache put{kSource, "put"};
  KernelCache twice{kSource, "twice"};
};

// A on device 0 puts 17 behind the gate; B (on `b_device`) doubles it,
// C on device 0 doubles again. B's body must run while A is not done.
void chain_runs_ahead(int b_device) {
  Runtime rt(runahead_options());
  Fixture f(rt);
  TaskSpace T("T");
  Flag b_ran;
  std::atomic<bool> a_done_when_b_ran{true};
  auto a = rt.spawn(T[0], {.placement = f.dev0}, [&f] { f.put_after_gate(17); });
  Device &bd = b_device == 0 ? static_cast<Device &>(f.dev0) : f.dev1;
  rt.spawn(T[1], {.after = {T[0]}, .placement = bd}, [&f, &b_ran, &a_done_when_b_ran, a] {
    f.twice_now();
    a_done_when_b_ran = a.done();
    b_ran.set();
  });
  rt.spawn(T[2], {.after = {T[1]}, .placement = f.dev0}, [&f] { f.twice_now(); });
  const bool ran = b_ran.wait();
  cr_expect(ran, "the dependent's body ran while the gate held its dependency's kernel");
  cr_expect(!a_done_when_b_ran, "the dependency was not done when the dependent's body ran");
  cr_expect(!a.done(), "the dependency completes only when its kernel ran");
  f.open();
  rt.wait();
  cr_expect_eq(f.value(), 68, "17 * 2 * 2 in order on the devices (got %d)", f.value());
  const Stats s = rt.stats();
  cr_expect_eq(s.completed, 3u, "all three completed (%llu)",
               static_cast<unsigned long long>(s.completed));
}

} // namespace

Test(runahead, a_dependent_on_the_same_device_queues_behind_its_dependency) {
  chain_runs_ahead(0);
}

Test(runahead, a_dependent_on_another_device_waits_for_its_dependency_on_the_device) {
  chain_runs_ahead(1);
}

Test(runahead, a_host_task_waits_until_device_work_is_done) {
  Runtime rt(runahead_options(true));
  Fixture f(rt);
  TaskSpace T("T");
  Flag b_ran;
  std::atomic<int> host_saw{-1};
  auto a = rt.spawn(T[0], {.placement = f.dev0}, [&f] { f.put_after_gate(21); });
  // A device dependent runs ahead (the test's cue that A's body returned);
  // the host one must not: it reads A's result through the API, as a
  // program that uses no arrays would.
  rt.spawn(T[1], {.after = {T[0]}, .placement = f.dev1}, [&b_ran] { b_ran.set(); });
  rt.spawn(T[2], {.after = {T[0]}, .placement = Arch::cpu},
           [&f, &host_saw, a] { host_saw = a.done() ? f.value() : -2; });
  cr_expect(b_ran.wait(), "the device dependent ran ahead");
  cr_expect_eq(host_saw.load(), -1, "the host task has not run while the gate was closed");
  f.open();
  rt.wait();
  cr_expect_eq(host_saw.load(), 21, "the host task ran after A was done and saw 21 (got %d)",
               host_saw.load());
}

PARLA_TEST(runahead, a_coroutine_dependent_waits_for_completion) {
  Runtime rt(runahead_options());
  Fixture f(rt);
  TaskSpace T("T");
  std::atomic<int> seen{-1};
  Flag b_ran;
  auto a = rt.spawn(T[0], {.placement = f.dev0}, [&f] { f.put_after_gate(5); });
  rt.spawn(T[1], {.after = {T[0]}, .placement = f.dev1}, [&b_ran] { b_ran.set(); });
  // Placed on a device with events, but a coroutine: it may await, so it
  // keeps the plain rule and starts after A completed.
  rt.spawn(T[2], {.after = {T[0]}, .placement = f.dev1}, [&f, &seen, a]() -> Coro<void> {
    seen = a.done() ? f.value() : -2;
    co_return;
  });
  cr_expect(b_ran.wait(), "the plain dependent ran ahead");
  f.open();
  rt.wait();
  // Without runahead for coroutines it would see -2 (A not done yet).
  cr_expect_eq(seen.load(), 5, "the coroutine saw A done with 5 (got %d)", seen.load());
}

// (A failing dependency's device work is not tested: PoCL 3.1 aborts in
// pocl_update_event_failed when a user event a kernel waits for is set to
// an error status, with or without runahead.)
Test(runahead, a_dependent_that_throws_ahead_fails_only_after_its_dependency) {
  Runtime rt(runahead_options());
  Fixture f(rt);
  TaskSpace T("T");
  Flag b_ran;
  auto a = rt.spawn(T[0], {.placement = f.dev0}, [&f] { f.put_after_gate(3); });
  auto b = rt.spawn(T[1], {.after = {T[0]}, .placement = f.dev1}, [&f, &b_ran] {
    f.twice_now();
    b_ran.set();
    throw std::runtime_error("B failed");
  });
  auto c = rt.spawn(T[2], {.after = {T[1]}, .placement = f.dev0}, [&f] { f.twice_now(); });
  cr_expect(b_ran.wait(), "the dependent ran ahead");
  cr_expect(!a.done() && !b.done(), "B's completion waits for A's (a: %d, b: %d)", a.done(),
            b.done());
  f.open();
  const std::string what = parla_test::thrown([&] { rt.wait(); });
  cr_expect_eq(what, std::string("B failed"), "wait rethrows B's error: \"%s\"", what.c_str());
  const Stats s = rt.stats();
  cr_expect(s.completed == 1 && s.failed == 1 && s.cancelled == 1,
            "A completed, B failed, C cancelled (%llu, %llu, %llu)",
            static_cast<unsigned long long>(s.completed), static_cast<unsigned long long>(s.failed),
            static_cast<unsigned long long>(s.cancelled));
  // B's kernel still ran after A's (the queue waited): 3 * 2. A body that
  // throws is not waited for on its devices, with or without runahead.
  cl_check(clFinish(f.dev1.queue()), "clFinish");
  const cl_int v = f.value();
  cr_expect_eq(v, 6, "A's 3 doubled once (got %d)", v);
}

Test(runahead, bodies_without_device_work_keep_program_order) {
  // Every task of the chain runs ahead of its dependency's completion.
  for (bool on : {false, true}) {
    Options o = parla_test::options();
    o.runahead = on;
    Runtime rt(std::move(o));
    TaskSpace T("T");
    std::vector<int> order;
    std::mutex mu;
    for (int i = 0; i < 64; ++i)
      rt.spawn(T[i], {.after = i ? TaskRefs(T[i - 1]) : TaskRefs{}}, [i, &order, &mu] {
        std::lock_guard lock(mu);
        order.push_back(i);
      });
    rt.wait();
    cr_assert_eq(order.size(), 64u);
    for (int i = 0; i < 64; ++i)
      cr_assert_eq(order[static_cast<size_t>(i)], i, "runahead %d: position %d", on, i);
  }
}
