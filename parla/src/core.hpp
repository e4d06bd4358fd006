// SPDX-License-Identifier: MIT
// The runtime's insides. One mutex (mu_) guards the task graph, the
// spaces' maps, the devices' reservations and the ready queue: every phase
// change happens under it, driven by a spawn or a completion, so there is
// no scheduler thread at all. Workers take ready tasks, run their bodies
// without the lock, and take it again to complete them.
//
// A task goes:  placeholder (named, not spawned) -> waiting_deps ->
//   [mapped once its dependencies are done] waiting_memory ->
//   waiting_compute -> ready -> running -> [device_pending] -> done
// and a coroutine that awaits goes running -> suspended -> waiting_compute
// (same devices) -> ready -> running ... -> done.
//
// device_pending (Options::runahead, on devices with events such as
// OpenCL's): the body returned and the task gave its compute back, so that
// the next task's body queues its work behind this one's while the device
// runs it; it holds its memory and completes in the device's callback. A
// dependent placed only on devices with events counts such a dependency
// as met at once: its body starts when its devices' queues wait for the
// dependency's events (device_deps), and it completes only after them.
#pragma once

#include <any>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <coroutine>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <memory_resource>
#include <mutex>
#include <queue>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "parla/runtime.hpp"
#include "src/trace.hpp"

namespace parla::detail {

class Core;

struct Scope;
struct TaskState;
struct ArrayState;

// What the calling thread is doing for a runtime.
struct ThreadContext {
  Core *core = nullptr;      // the runtime whose worker this thread is
  int worker = -1;           // its worker number there
  TaskState *task = nullptr; // the task whose body runs now
  Scope *scope = nullptr;    // the innermost finish() of this thread
  bool will_pop = false;     // the worker takes a ready task next: no wake-up needed
};
extern thread_local ThreadContext tl;

// One turn of a spin: tells the CPU the thread waits (and yields the core
// to its hyperthread sibling).
inline void cpu_relax() {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#endif
}

// Takes the lock, spinning a little first: the runtime's critical sections
// are short, and a sleep on a contended mutex costs a context switch each
// way (glibc's adaptive mutexes do the same).
inline void lock_briefly_spinning(std::unique_lock<std::mutex> &lock) {
  for (int i = 0; i < 100; ++i) {
    if (lock.try_lock())
      return;
    cpu_relax();
  }
  lock.lock();
}

struct IndexHash {
  size_t operator()(const Index &i) const { return i.hash(); }
};

struct SpaceState {
  std::string name;
  std::vector<int64_t> shape; // empty: unbounded
  Core *core = nullptr;       // the runtime it is bound to (set by its first spawn)
  // The map's nodes come from a pool of the space's own, in blocks: one
  // malloc per spawn (made by the spawning thread, freed by whichever
  // thread drops the space) cost a tenth of a spawn. Entries are never
  // erased one by one (retire() replaces them), and the map is used under
  // the runtime's lock or by the space's last owner, so the pool needs
  // no lock of its own.
  std::pmr::unsynchronized_pool_resource task_nodes;
  std::pmr::unordered_map<Index, std::shared_ptr<TaskState>, IndexHash> tasks{&task_nodes};
  size_t unfinished = 0;
  size_t retired = 0; // entries that are Core::retired_task_
  std::atomic<size_t> spawned{0};
  std::weak_ptr<SpaceState> self; // for TaskRefs made from inside the runtime
  std::string describe(const Index &index) const { return name + "[" + index.to_string() + "]"; }
  // parla::Error when index does not fit the shape.
  void check(const Index &index) const;
};

enum class Phase : uint8_t {
  placeholder,
  waiting_deps,
  waiting_memory,
  waiting_compute,
  ready,
  running,
  suspended,
  device_pending, // the body returned; its device work has not finished yet
  done,
};

// The finish() scope a task was spawned in.
struct Scope {
  size_t pending = 0;
};

struct TaskState {
  Core *core = nullptr;
  SpaceState *space = nullptr;
  Index index;
  // Its entry in space->tasks (an unordered_map's elements stay where
  // they are when it rehashes), for retirement without a lookup.
  std::shared_ptr<TaskState> *slot = nullptr;
  uint64_t seq = 0; // spawn order
  Phase phase = Phase::placeholder;
  std::atomic<bool> done{false}; // phase == done, readable without the lock (acquire)
  bool never_spawned = false;    // a placeholder a graph error completed
  bool started = false;          // its body began: fail-fast lets it finish

  // Graph: dependencies not done yet, tasks waiting for this one, and
  // suspended coroutines awaiting it.
  uint32_t pending_deps = 0;
  std::vector<TaskState *> waiting_on; // for graph-error reports and trace flows
  std::vector<TaskState *> dependents;
  std::vector<TaskState *> awaiters;
  uint32_t pending_awaits = 0;
  // device_pending: callbacks still to come (+1 while run() arms them),
  // the first device error, and the events its devices' queues got.
  uint32_t device_waits = 0;
  std::exception_ptr device_error;
  std::vector<std::shared_ptr<DeviceEvent>> events;
  // Dependencies met early (device_pending when this task was released):
  // its queues wait for their events, and it completes after them.
  std::vector<TaskState *> device_deps;
  bool completion_deferred = false; // finished while device_deps remained
  int8_t event_devices_only = -1;   // cache of Core::on_event_devices_only (-1: not known)
  TaskRefs requested_awaits;        // set by a coroutine's await_suspend, read after it returns

  Placement placement;
  Resources default_resources;
  std::vector<std::pair<Array, Access>> accesses;
  uint64_t access_bytes = 0;
  // Chosen at map time.
  std::vector<Device *> devices;
  uint64_t memory = 0;     // per device
  uint32_t milli_vcus = 0; // per device
  bool holds_memory = false;
  bool holds_compute = false;

  std::unique_ptr<Body> body;
  std::coroutine_handle<> coro;
  std::any result;
  std::exception_ptr error;
  Scope *scope = nullptr;

  // Trace: the worker and time the current segment started on, the lanes
  // it holds on its devices, and where its last segment ended.
  int worker = -1;
  double start_us = 0;
  double end_us = 0;
  std::vector<int> lanes;

  std::string name() const { return space->describe(index); }
  bool is_done() const { return phase == Phase::done; }
  TaskRef ref() const { return TaskRef(space->self.lock(), index); }
};

struct DeviceState {
  Device *device = nullptr;
  uint64_t memory_capacity = 0;
  uint32_t milli_vcus_capacity = 0;
  uint64_t memory_reserved = 0;
  uint32_t milli_vcus_reserved = 0;
  // Mapped and not done: what the placement policy weighs.
  uint32_t mapped_tasks = 0;
  uint64_t mapped_memory = 0; // of mapped tasks not yet holding it
  // Tasks queued for this device's memory or compute, first come first
  // served: a newcomer queues behind them instead of overtaking. The queues
  // may hold tasks that finished meanwhile (dropped when met); the counts
  // are of those still waiting.
  uint32_t memory_waiters = 0;
  uint32_t compute_waiters = 0;
  std::deque<TaskState *> memory_queue;
  std::deque<TaskState *> compute_queue;
  std::vector<bool> lanes_busy; // trace tracks of concurrent tasks
  // Arrays with a replica here, evicted (to the host) before the device goes.
  std::vector<std::weak_ptr<ArrayState>> arrays;
};

class Core {
public:
  explicit Core(Options options);
  ~Core();

  std::shared_ptr<TaskState> spawn(const TaskRef &id, SpawnOptions options,
                                   std::unique_ptr<Body> body);
  std::shared_ptr<TaskState> state_of(const TaskRef &ref);
  void wait_all();
  void wait_space(SpaceState &space);
  void wait_refs(const TaskRefs &refs);
  void wait_task(TaskState &task);
  void finish(const std::function<void()> &block);
  bool refs_done(const TaskRefs &refs);
  void rethrow_if_failed(const TaskRefs &refs);
  void await_refs(TaskState &task, TaskRefs refs);

  const std::vector<Device *> &devices() const { return device_list_; }
  bool sequential() const { return sequential_; }
  unsigned threads() const { return static_cast<unsigned>(workers_.size()); }
  Stats stats() const;
  void write_trace(const std::string &path) const;

private:
  using Lock = std::unique_lock<std::mutex>;

  // core.cpp: graph, completion, waits, fail-fast.
  // The task a reference names; a placeholder is made for one not spawned.
  const std::shared_ptr<TaskState> &lookup(const TaskRef &ref); // under mu_
  TaskState *find(const TaskRef &ref);                          // nullptr if never named
  SpaceState &bind(const std::shared_ptr<SpaceState> &space);
  enum class Outcome : uint8_t { completed, failed, cancelled, never_spawned };
  // Completes task and, through a work list (no recursion along chains),
  // every dependent its error cancels.
  void complete(TaskState *task, std::exception_ptr error, Outcome outcome);
  void finish_one(TaskState *task, std::exception_ptr error, Outcome outcome);
  void drain_completions();
  void fail_fast(TaskState *failed, std::exception_ptr error);
  void release_dependents(TaskState *task);
  void resume_awaiters(TaskState *task);
  // What a waiting thread of the program's own may run while it waits
  // (Options::waiting_thread_helps): the tasks the wait is for.
  using HelpsWith = std::function<bool(const TaskState &)>;
  void wait_until(Lock &lock, const std::function<bool()> &done,
                  const HelpsWith *helps_with = nullptr);
  bool stuck() const;
  void report_stuck();
  void rethrow_error();
  void wake_waiters();
  std::vector<TaskState *> live_tasks() const; // under mu_
  // A completed task nobody can ask more of than "done" (no value, no
  // error, no trace) gives its state up: its space keeps retired_task_ in
  // its place, so a later dependency on it still finds it done. The state
  // goes to graveyard_ (a space nobody holds, all of whose tasks retired,
  // to dropped_spaces_), freed by free_graveyard() outside mu_: an Array's
  // last reference releases device memory, which may be a remote call.
  void retire(TaskState *task);
  void drop_unused_spaces();
  void free_graveyard(Lock &lock);
  static constexpr size_t kGraveyardBatch = 256;

  // scheduler.cpp: placement, reservations, the ready queue, workers.
  void check_placeable(const Placement &placement, const Resources &defaults, uint64_t access_bytes,
                       const TaskRef &id) const;
  void map(TaskState *task);
  // map()'s end: the task's devices chosen, it takes what it needs of them
  // into account and queues for their memory.
  void take_mapping(TaskState *task, uint64_t memory, uint32_t milli_vcus);
  // try_: reserve, or queue behind the tasks waiting for the same devices.
  void try_reserve_memory(TaskState *task);
  void try_reserve_compute(TaskState *task);
  void reserve_memory(TaskState *task);
  void reserve_compute(TaskState *task);
  bool compute_fits(const TaskState *task) const;
  void take_compute(TaskState *task); // accounts only
  void retry_waiting();
  // retry_waiting's step: the task at the front of q if it is also at the
  // front of its other devices' queues and fits now, reserved.
  bool reserve_front(std::deque<TaskState *> &q, bool memory);
  void release_compute(TaskState *task);
  void release_memory(TaskState *task);
  void push_ready(TaskState *task);
  TaskState *pop_ready();
  TaskState *pop_ready_for(const HelpsWith &mine); // the first ready task that is mine
  bool claim_ready();                              // a spinning worker's turn to take a ready task
  void worker_main(int worker);
  void run(Lock &lock, TaskState *task, int worker);
  void run_sequential(Lock &lock, TaskState *task);
  void drain_sequential(Lock &lock);
  void after_run(TaskState *task, std::exception_ptr error);
  // Outside mu_: records an event on each device of the task (true if any
  // will call back); `unarmed` counts devices waited for here instead.
  bool record_device_events(TaskState *task, uint32_t *unarmed, std::exception_ptr *error);
  void device_done(TaskState *task, std::exception_ptr error);
  // Trace: the task's slices on its devices' lanes, up to end; frees the lanes.
  void end_device_slices(TaskState *task, double end);
  void end_device_wait(TaskState *task, uint32_t count);
  // Runahead: dependents placed only on devices with events go on now.
  void release_dependents_early(TaskState *task);
  bool on_event_devices_only(TaskState *task);
  // Outside mu_: the task's queues wait for its device_deps' events.
  void queue_after_device_deps(Lock &lock, TaskState *task);
  // Outside mu_: the task's accesses made valid on its device.
  void prepare_accesses(Lock &lock, TaskState *task);

  mutable std::mutex mu_;
  std::condition_variable work_cv_; // idle workers
  std::condition_variable done_cv_; // waiters (and workers helping while they wait)
  std::atomic<bool> stop_{false};

  std::vector<std::unique_ptr<Device>> owned_devices_;
  std::vector<Device *> device_list_;
  std::vector<DeviceState> device_states_;
  std::vector<std::shared_ptr<SpaceState>> spaces_;
  size_t spaces_pruned_at_ = 8;               // drop_unused_spaces() when spaces_ grows to this
  std::shared_ptr<SpaceState> retired_space_; // retired_task_'s, for its name
  std::shared_ptr<TaskState> retired_task_;
  std::vector<std::shared_ptr<TaskState>> graveyard_;
  std::vector<std::shared_ptr<DeviceEvent>> dead_events_; // released outside mu_ too
  std::vector<std::shared_ptr<SpaceState>> dropped_spaces_;
  // Retired states nothing else held, made anew in place: lookup() takes
  // one instead of an allocation (the spawning thread is the bottleneck).
  std::vector<std::shared_ptr<TaskState>> pool_;
  static constexpr size_t kPoolMax = 4096;

  std::deque<TaskState *> ready_;
  std::atomic<size_t> ready_count_{0}; // what spinning workers watch
  std::atomic<size_t> claims_{0};      // spinning workers on their way to the lock for one of those
  std::atomic<uint64_t> changes_{0};   // wake_waiters() calls: what spinning waiters watch
  unsigned sleepers_ = 0;              // workers in work_cv_
  unsigned waiters_ = 0;               // threads in done_cv_
  std::vector<const std::function<bool()> *> sleeping_waits_; // what each of those waits for
  unsigned helpers_ = 0;         // of those, workers that also take ready tasks
  unsigned running_ = 0;         // bodies running now
  unsigned blocked_in_wait_ = 0; // running bodies stuck in a wait
  unsigned device_pending_ = 0;  // tasks whose device work has not finished
  std::vector<const std::function<bool()> *> blocked_waits_; // what each of those waits for
  uint64_t unfinished_ = 0;
  uint64_t next_seq_ = 0;
  uint64_t rr_ = 0;                             // placement tie-break rotation
  std::vector<Device *> map_chosen_, map_best_; // map()'s scratch (under mu_)
  Stats stats_;
  struct Pending {
    TaskState *task;
    std::exception_ptr error;
    Outcome outcome;
  };
  std::vector<Pending> completing_;
  bool in_complete_ = false;

  std::exception_ptr error_; // the first task error (fail-fast)
  bool error_observed_ = false;

  bool sequential_ = false;
  bool runahead_ = false;             // Options::runahead
  bool outsiders_help_ = false;       // Options::waiting_thread_helps
  std::vector<bool> outsider_tracks_; // trace tracks of helping outside threads, taken or not
  int take_outsider_track();          // under mu_
  bool draining_ = false;
  std::priority_queue<std::pair<uint64_t, TaskState *>,
                      std::vector<std::pair<uint64_t, TaskState *>>, std::greater<>>
      sequential_queue_;

  int spin_us_ = 0;
  std::vector<std::thread> workers_;
  std::string trace_path_;
  std::unique_ptr<Trace> trace_;
  uint64_t flows_ = 0;
  std::chrono::steady_clock::time_point epoch_;
  double now_us() const;
};

} // namespace parla::detail
