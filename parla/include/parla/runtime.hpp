// SPDX-License-Identifier: MIT
// The runtime: devices, worker threads and the scheduler that moves each
// task through map -> reserve memory -> reserve compute -> launch. It is
// driven by spawns and completions only; an idle runtime's threads sleep.
//
//   parla::Runtime rt({.devices = parla::host_devices(2)});
//   parla::TaskSpace T("T");
//   for (int i = 0; i < 10; ++i)
//     rt.spawn(T[i], {.after = T[i - 1], .placement = parla::Arch::cpu}, [=] { work(i); });
//   rt.wait(T); // rethrows the first error of any task
//
// The first exception a task throws cancels every task not yet started;
// its dependents and waiters get a parla::Cancelled naming it, and wait()
// and finish() rethrow the original. A runtime destroyed while an error
// nobody observed is pending prints it and terminates the program.
//
// Sequential mode (Options::sequential or PARLA_SEQUENTIAL=1) runs every
// task on the thread that spawned it, as soon as its dependencies are
// done, in spawn order: a debugging mode with the same results.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "parla/array.hpp"
#include "parla/device.hpp"
#include "parla/error.hpp"
#include "parla/placement.hpp"
#include "parla/task.hpp"
#include "parla/task_space.hpp"

namespace parla {

namespace detail {
class Core;
}

struct Options {
  // Empty: one host CPU device with every host CPU.
  std::vector<std::unique_ptr<Device>> devices{};
  // Threads running task bodies; 0: the host CPU devices' threads (at
  // least the host's CPU count).
  unsigned threads = 0;
  // A thread outside the runtime that waits (wait, finish, a task's
  // get()) runs ready tasks meanwhile, as oneTBB's and OpenMP's waiting
  // threads do: with threads = cores - 1 the spawning thread and the
  // workers then share the cores without a spare thread contending for
  // them. It runs only what its wait is for (a space's tasks, a finish
  // block's children, the task of get(); any task in wait()), whose
  // bodies must not need anything the waiting thread holds (a lock taken
  // around the wait). Also PARLA_HELP=1.
  bool waiting_thread_helps = false;
  // Also PARLA_SEQUENTIAL=1.
  bool sequential = false;
  // A Chrome/Perfetto JSON trace written when the runtime ends; also
  // PARLA_TRACE=path.
  std::string trace_path{};
  // How long an idle worker spins before it sleeps (µs); also PARLA_SPIN_US.
  int spin_us = -1;
  // Runahead: a task whose body queued device work ends in the device's
  // completion callback (an OpenCL marker's) instead of a wait on its
  // worker, so the worker and the device's compute go to the next task at
  // once; and a dependent placed only on devices with events (OpenCL) starts
  // as soon as its dependencies' bodies returned, its queues waiting on the
  // device for their work (a barrier on their events; the devices of one
  // platform share a context). Such a body must not read, on the host,
  // what its dependencies' kernels write, except through arrays and waits
  // (get(), wait, finish), which see the finished work. Sequential mode
  // ignores it. Also PARLA_RUNAHEAD=1.
  bool runahead = false;
};

struct SpawnOptions {
  TaskRefs after{};      // dependencies (tasks may be spawned later)
  Placement placement{}; // empty: any one device
  Resources resources{}; // for options without resources of their own
  // Arrays (or views) the body reads, writes, or both, on the task's first
  // device; without resources.memory the task is charged their bytes.
  std::vector<Array> in{};
  std::vector<Array> out{};
  std::vector<Array> inout{};
};

struct Stats {
  uint64_t spawned = 0;
  uint64_t completed = 0; // ran to the end without an error
  uint64_t failed = 0;    // threw
  uint64_t cancelled = 0; // never ran (fail-fast, failed dependency, graph error)
  // What the runtime still holds: tasks with a state of their own (not yet
  // done, or done with a value, an error or a trace to keep; a completed
  // task without one retires to a few bytes), and task spaces (one that
  // only the runtime holds, all of whose tasks retired, is dropped).
  uint64_t task_states = 0;
  uint64_t spaces = 0;
};

class Runtime {
public:
  explicit Runtime(Options options = {});
  // Waits for every task; see above for an unobserved error.
  ~Runtime();
  Runtime(const Runtime &) = delete;
  Runtime &operator=(const Runtime &) = delete;

  // Throws parla::Error for a duplicate id, an index outside a bounded
  // space, or a placement no device satisfies (naming the task and need).
  //
  // In a coroutine, spawn first and co_await the handle in a statement of
  // its own: GCC 12 destroys temporaries made inside a co_await operand
  // (such as these options) twice.
  template <class F> auto spawn(const TaskRef &id, SpawnOptions options, F &&body) {
    using Fn = std::decay_t<F>;
    using Value = typename detail::BodyResult<std::invoke_result_t<Fn &>>::type;
    auto state = spawn_erased(id, std::move(options),
                              std::make_unique<detail::CallableBody<Fn>>(std::forward<F>(body)));
    return TaskHandle<Value>(std::move(state), id);
  }
  template <class F> auto spawn(const TaskRef &id, F &&body) {
    return spawn(id, SpawnOptions{}, std::forward<F>(body));
  }

  // Waits for every task spawned so far / in the space / named. A task that
  // waits for one nobody spawned, or a cycle, is reported as a GraphError
  // once no task runs or is ready to: a program that spawns from threads
  // of its own must not wait for those tasks before it spawned them.
  void wait();
  void wait(const TaskSpace &space);
  void wait(const TaskRefs &tasks);
  // Runs block, then waits for the tasks it spawned directly (not for
  // their children).
  void finish(const std::function<void()> &block);
  template <class T> T get(const TaskRef &task);

  const std::vector<Device *> &devices() const;
  std::vector<Device *> devices(Arch arch) const;
  Device &device(Arch arch, int index) const;
  bool sequential() const;
  unsigned threads() const;
  Stats stats() const;
  // The trace so far (Chrome JSON trace-event format, opens in Perfetto).
  void write_trace(const std::string &path) const;

private:
  std::shared_ptr<detail::TaskState> spawn_erased(const TaskRef &id, SpawnOptions options,
                                                  std::unique_ptr<detail::Body> body);
  std::shared_ptr<detail::TaskState> state_of(const TaskRef &task);
  std::unique_ptr<detail::Core> core_;
};

template <class T> T Runtime::get(const TaskRef &task) {
  return TaskHandle<T>(state_of(task), task).get();
}

// In a task body: the devices the task was placed on, first one first.
Device &current_device();
const std::vector<Device *> &current_devices();
// Outside any task: nullptr.
const TaskRef *current_task();

} // namespace parla
