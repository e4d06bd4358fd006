// SPDX-License-Identifier: MIT
// The task graph: spawning, completion, cancellation (fail-fast and failed
// dependencies), waits and graph errors. Placement, reservations and the
// workers are in scheduler.cpp.
#include "src/core.hpp"

#include "src/array_state.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <span>

namespace parla::detail {

thread_local ThreadContext tl;

namespace {

std::string what_of(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception &x) {
    return x.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

// The error that started a chain of cancellations.
std::exception_ptr root_of(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const Cancelled &c) {
    return c.cause() ? c.cause() : e;
  } catch (...) {
    return e;
  }
}

bool env_flag(const char *name) {
  const char *v = std::getenv(name);
  return v != nullptr && *v != '\0' && std::string_view(v) != "0";
}

} // namespace

Core::Core(Options options) : epoch_(std::chrono::steady_clock::now()) {
  sequential_ = options.sequential || env_flag("PARLA_SEQUENTIAL");
  runahead_ = options.runahead || env_flag("PARLA_RUNAHEAD");
  outsiders_help_ = options.waiting_thread_helps || env_flag("PARLA_HELP");
  trace_path_ = options.trace_path;
  if (trace_path_.empty() && std::getenv("PARLA_TRACE") != nullptr)
    trace_path_ = std::getenv("PARLA_TRACE");
  spin_us_ = options.spin_us;
  if (spin_us_ < 0) {
    const char *v = std::getenv("PARLA_SPIN_US");
    spin_us_ = v != nullptr ? static_cast<int>(std::strtol(v, nullptr, 10)) : 20;
  }
  owned_devices_ = std::move(options.devices);
  if (owned_devices_.empty())
    owned_devices_ = host_devices(1);
  unsigned host_threads = 0;
  int per_arch[8] = {};
  for (size_t i = 0; i < owned_devices_.size(); ++i) {
    Device &d = *owned_devices_[i];
    if (d.id_ >= 0)
      throw Error("parla: a device belongs to one runtime only");
    d.id_ = static_cast<int>(i);
    d.index_in_arch_ = per_arch[static_cast<int>(d.arch())]++;
    d.name_ = std::string(to_string(d.arch())) + "(" + std::to_string(d.index_in_arch_) + ")";
    device_list_.push_back(&d);
    DeviceState s;
    s.device = &d;
    s.memory_capacity = d.memory_capacity();
    s.milli_vcus_capacity = static_cast<uint32_t>(std::lround(d.vcus() * 1000));
    device_states_.push_back(std::move(s));
    if (d.arch() == Arch::cpu)
      host_threads += static_cast<unsigned>(d.vcus());
  }
  unsigned threads = options.threads;
  if (threads == 0)
    threads = std::max(host_threads, std::max(1u, std::thread::hardware_concurrency()));
  if (!trace_path_.empty()) {
    trace_ = std::make_unique<Trace>();
    trace_->process_name(Trace::kWorkers, "parla workers");
    trace_->process_name(Trace::kDevices, "parla devices");
    for (unsigned w = 0; w < (sequential_ ? 1 : threads); ++w)
      trace_->thread_name(Trace::kWorkers, static_cast<int>(w),
                          sequential_ ? "spawning thread" : "worker " + std::to_string(w));
  }
  retired_space_ = std::make_shared<SpaceState>();
  retired_space_->name = "(a retired task)";
  retired_task_ = std::make_shared<TaskState>();
  retired_task_->core = this;
  retired_task_->space = retired_space_.get();
  retired_task_->phase = Phase::done;
  retired_task_->done.store(true, std::memory_order_relaxed);
  if (!sequential_)
    for (unsigned w = 0; w < threads; ++w)
      workers_.emplace_back([this, w] { worker_main(static_cast<int>(w)); });
}

Core::~Core() {
  {
    Lock lock(mu_);
    wait_until(lock, [this] { return unfinished_ == 0; });
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto &w : workers_)
    w.join();
  graveyard_.clear();
  dead_events_.clear();
  pool_.clear();
  // Arrays may outlive the devices: what only a device holds goes to the host.
  for (DeviceState &s : device_states_)
    for (auto &weak : s.arrays)
      if (auto a = weak.lock())
        a->evict(*s.device);
  if (trace_) {
    std::string why;
    if (!trace_->write(trace_path_, &why))
      std::fprintf(stderr, "parla: cannot write the trace: %s\n", why.c_str());
  }
  // Spaces may outlive the runtime: they forget its tasks and can be used
  // by another one.
  for (auto &s : spaces_) {
    s->tasks.clear();
    s->core = nullptr;
    s->unfinished = 0;
    s->retired = 0;
    s->spawned = 0;
  }
  if (error_ && !error_observed_) {
    std::fprintf(stderr, "parla: a task failed and nothing waited for its error: %s\n",
                 what_of(error_).c_str());
    std::terminate();
  }
}

double Core::now_us() const {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - epoch_)
      .count();
}

SpaceState &Core::bind(const std::shared_ptr<SpaceState> &space) {
  if (space->core == this)
    return *space;
  if (space->core != nullptr)
    throw Error("parla: task space " + space->name + " is in use by another runtime");
  space->core = this;
  space->self = space;
  if (spaces_.size() >= spaces_pruned_at_)
    drop_unused_spaces();
  spaces_.push_back(space);
  return *space;
}

void Core::drop_unused_spaces() {
  // A space only the runtime holds can never be named again; once all its
  // tasks retired nothing points into it (a cancelled task may still sit in
  // a queue, so a space with one stays).
  if (!trace_)
    for (size_t i = 0; i < spaces_.size();) {
      SpaceState &s = *spaces_[i];
      if (spaces_[i].use_count() == 1 && s.unfinished == 0 && s.retired == s.tasks.size()) {
        dropped_spaces_.push_back(std::move(spaces_[i]));
        spaces_[i] = std::move(spaces_.back());
        spaces_.pop_back();
      } else {
        ++i;
      }
    }
  // Amortised: the next pass once as many spaces again are bound.
  spaces_pruned_at_ = std::max<size_t>(8, 2 * spaces_.size());
}

void Core::retire(TaskState *t) {
  if (t->slot == nullptr || t->slot->get() != t)
    return;
  SpaceState *space = t->space;
  std::shared_ptr<TaskState> *slot = t->slot;
  t->slot = nullptr;
  graveyard_.push_back(std::move(*slot));
  *slot = retired_task_;
  ++space->retired;
}

// A retired state made anew for the next spawn. The vectors every task
// fills keep their buffers: the spawning thread would otherwise allocate
// them again, from memory the workers freed (malloc's slow path).
static void renew(TaskState *t) {
  std::vector<Device *> devices = std::move(t->devices);
  std::vector<TaskState *> waiting_on = std::move(t->waiting_on);
  std::vector<TaskState *> dependents = std::move(t->dependents);
  std::destroy_at(t);
  std::construct_at(t);
  // A pooled state keeps small buffers only: one task's thousand
  // dependencies must not stay allocated in the pool.
  const auto keep = [](auto &from, auto &to) {
    if (from.capacity() <= 16) {
      from.clear();
      to = std::move(from);
    }
  };
  keep(devices, t->devices);
  keep(waiting_on, t->waiting_on);
  keep(dependents, t->dependents);
}

void Core::free_graveyard(Lock &lock) {
  std::vector<std::shared_ptr<TaskState>> dead;
  std::vector<std::shared_ptr<SpaceState>> spaces;
  std::vector<std::shared_ptr<DeviceEvent>> events;
  dead.swap(graveyard_);
  spaces.swap(dropped_spaces_);
  events.swap(dead_events_);
  const size_t room = kPoolMax - std::min(kPoolMax, pool_.size());
  lock.unlock();
  spaces.clear();
  events.clear(); // through ava, a call each
  size_t kept = 0;
  for (auto &state : dead) {
    // Only this vector holds it (a handle would also count): nothing can
    // reach it, so it may be made anew for another task.
    if (kept < room && state.use_count() == 1) {
      renew(state.get());
      dead[kept++] = std::move(state);
    } else {
      state.reset();
    }
  }
  lock.lock();
  for (size_t i = 0; i < kept; ++i)
    pool_.push_back(std::move(dead[i]));
}

const std::shared_ptr<TaskState> &Core::lookup(const TaskRef &ref) {
  SpaceState &space = bind(ref.space());
  auto [it, added] = space.tasks.try_emplace(ref.index());
  if (added) {
    if (pool_.empty()) {
      it->second = std::make_shared<TaskState>();
    } else {
      it->second = std::move(pool_.back());
      pool_.pop_back();
    }
    it->second->core = this;
    it->second->space = &space;
    it->second->index = ref.index();
    it->second->slot = &it->second;
  }
  return it->second;
}

TaskState *Core::find(const TaskRef &ref) {
  SpaceState &space = bind(ref.space());
  auto it = space.tasks.find(ref.index());
  return it == space.tasks.end() ? nullptr : it->second.get();
}

// Spawned and unfinished tasks, newest first (as fail-fast has always
// cancelled them: an older task's cancellation names the newer ones that
// depended on it). Rare paths only: a list kept per spawn linked each new
// task to the previous one, a line that the workers completing it wrote.
std::vector<TaskState *> Core::live_tasks() const {
  std::vector<TaskState *> live;
  for (const auto &space : spaces_)
    for (const auto &[index, t] : space->tasks)
      if (t->phase != Phase::placeholder && !t->is_done())
        live.push_back(t.get());
  std::sort(live.begin(), live.end(),
            [](const TaskState *a, const TaskState *b) { return a->seq > b->seq; });
  return live;
}

std::shared_ptr<TaskState> Core::spawn(const TaskRef &id, SpawnOptions options,
                                       std::unique_ptr<Body> body) {
  // What needs no lock is done before it is taken: the workers wait for
  // the lock to complete tasks, and the spawning thread is the bottleneck
  // of a stream of small tasks.
  uint64_t access_bytes = 0;
  for (const auto *list : {&options.in, &options.out, &options.inout})
    for (const Array &a : *list)
      access_bytes += a.bytes();
  check_placeable(options.placement, options.resources, access_bytes, id); // throws
  Lock lock(mu_, std::defer_lock);
  lock_briefly_spinning(lock);
  std::shared_ptr<TaskState> self = lookup(id);
  TaskState *t = self.get();
  if (t->phase != Phase::placeholder || t->never_spawned) // a retired one has no name of its own
    throw Error("parla: duplicate task id " + id.space()->describe(id.index()) +
                " (spawned before)");
  t->placement = std::move(options.placement);
  t->default_resources = options.resources;
  t->accesses.clear();
  t->access_bytes = access_bytes;
  for (auto [list, mode] :
       {std::pair{&options.in, Access::in}, std::pair{&options.out, Access::out},
        std::pair{&options.inout, Access::inout}})
    for (Array &a : *list)
      t->accesses.emplace_back(std::move(a), mode);
  // Dependencies are named (placeholders made) before anything is changed,
  // so that an exception leaves the graph as it was.
  // On the stack for the usual few (an allocation here is a tenth of a spawn).
  std::array<TaskState *, 8> few;
  std::vector<TaskState *> many;
  std::span<TaskState *> deps;
  if (options.after.size() <= few.size()) {
    deps = std::span(few.data(), options.after.size());
  } else {
    many.resize(options.after.size());
    deps = many;
  }
  for (size_t i = 0; i < deps.size(); ++i)
    deps[i] = lookup(options.after[i]).get();

  t->body = std::move(body);
  t->seq = next_seq_++;
  t->scope = tl.scope;
  if (t->scope)
    ++t->scope->pending;
  ++t->space->unfinished;
  t->space->spawned.fetch_add(1, std::memory_order_relaxed);
  ++unfinished_;
  ++stats_.spawned;
  t->phase = Phase::waiting_deps;

  std::exception_ptr cancel_why;
  for (TaskState *d : deps) {
    if (d == t) {
      cancel_why =
          std::make_exception_ptr(GraphError("parla: " + t->name() + " depends on itself"));
      break;
    }
    // Done ones only for the trace (their flows): graph errors follow the
    // unfinished, and each entry costs memory until the runtime ends.
    if (!d->is_done() || trace_)
      t->waiting_on.push_back(d);
    if (d->is_done()) {
      if (d->error) {
        cancel_why = std::make_exception_ptr(
            Cancelled(t->name() + " was cancelled: its dependency " + d->name() + " failed",
                      root_of(d->error)));
        break;
      }
      continue;
    }
    d->dependents.push_back(t);
    ++t->pending_deps;
  }
  if (!cancel_why && error_)
    cancel_why = std::make_exception_ptr(
        Cancelled(t->name() + " was cancelled: an earlier task failed", error_));
  if (cancel_why) {
    complete(t, cancel_why, Outcome::cancelled);
    if (!error_)
      fail_fast(t, cancel_why);
  } else if (t->pending_deps == 0) {
    map(t);
  }
  if (sequential_ && !draining_)
    drain_sequential(lock);
  if (sequential_ && graveyard_.size() >= kGraveyardBatch) // no worker frees them
    free_graveyard(lock);
  return self;
}

std::shared_ptr<TaskState> Core::state_of(const TaskRef &ref) {
  Lock lock(mu_);
  return lookup(ref);
}

void Core::complete(TaskState *task, std::exception_ptr error, Outcome outcome) {
  completing_.push_back({task, std::move(error), outcome});
  drain_completions();
}

void Core::drain_completions() {
  if (in_complete_)
    return;
  in_complete_ = true;
  while (!completing_.empty()) {
    Pending p = std::move(completing_.back());
    completing_.pop_back();
    if (!p.task->is_done())
      finish_one(p.task, std::move(p.error), p.outcome);
  }
  in_complete_ = false;
  retry_waiting();
  wake_waiters();
}

void Core::finish_one(TaskState *t, std::exception_ptr error, Outcome outcome) {
  if (outcome != Outcome::never_spawned) {
    if (t->phase == Phase::waiting_memory || t->phase == Phase::waiting_compute)
      for (Device *d : t->devices) {
        DeviceState &s = device_states_[static_cast<size_t>(d->id())];
        (t->phase == Phase::waiting_memory ? s.memory_waiters : s.compute_waiters)--;
      }
    if (t->holds_compute)
      release_compute(t);
    for (Device *d : t->devices) {
      DeviceState &s = device_states_[static_cast<size_t>(d->id())];
      --s.mapped_tasks;
      if (!t->holds_memory)
        s.mapped_memory -= t->memory;
    }
    if (t->holds_memory)
      release_memory(t);
    --t->space->unfinished;
    --unfinished_;
    if (t->scope)
      --t->scope->pending;
    switch (outcome) {
    case Outcome::completed:
      ++stats_.completed;
      break;
    case Outcome::failed:
      ++stats_.failed;
      break;
    default:
      ++stats_.cancelled;
    }
  }
  t->error = std::move(error);
  t->phase = Phase::done;
  t->done.store(true, std::memory_order_release);
  if (t->coro) {
    t->coro.destroy();
    t->coro = {};
  }
  t->body.reset();
  release_dependents(t);
  resume_awaiters(t);
  if (outcome == Outcome::completed && !trace_ && !t->error && !t->result.has_value())
    retire(t);
}

void Core::release_dependents(TaskState *t) {
  if (!t->events.empty()) {
    for (auto &e : t->events)
      dead_events_.push_back(std::move(e)); // released outside mu_
    t->events.clear();
  }
  for (TaskState *d : t->dependents) {
    if (d->is_done())
      continue;
    // Met already (runahead): d counted it when t's body returned.
    const auto early = std::find(d->device_deps.begin(), d->device_deps.end(), t);
    const bool met_early = early != d->device_deps.end();
    if (met_early) {
      *early = d->device_deps.back();
      d->device_deps.pop_back();
    }
    if (t->error && !d->started) {
      completing_.push_back(
          {d,
           std::make_exception_ptr(
               Cancelled(d->name() + " was cancelled: its dependency " + t->name() + " failed",
                         root_of(t->error))),
           Outcome::cancelled});
    } else if (met_early) {
      if (d->device_deps.empty() && d->completion_deferred) {
        d->completion_deferred = false;
        --device_pending_;
        after_run(d, std::move(d->device_error));
      }
    } else if (!t->error && --d->pending_deps == 0 && d->phase == Phase::waiting_deps) {
      map(d);
    }
    // Graph-error reports follow only unfinished dependencies, and t may
    // retire: the trace alone needs the finished ones (their flows).
    if (!trace_)
      if (auto w = std::find(d->waiting_on.begin(), d->waiting_on.end(), t);
          w != d->waiting_on.end()) {
        *w = d->waiting_on.back();
        d->waiting_on.pop_back();
      }
  }
  // A state is reused (renew()): small buffers stay, a large one goes.
  t->dependents.clear();
  if (t->dependents.capacity() > 16)
    t->dependents.shrink_to_fit();
}

void Core::resume_awaiters(TaskState *t) {
  for (TaskState *a : t->awaiters)
    if (!a->is_done() && --a->pending_awaits == 0) {
      a->phase = Phase::waiting_compute;
      try_reserve_compute(a);
    }
  t->awaiters.clear();
}

void Core::await_refs(TaskState &task, TaskRefs refs) {
  task.requested_awaits = std::move(refs);
}

void Core::fail_fast(TaskState *failed, std::exception_ptr error) {
  if (error_)
    return;
  error_ = root_of(error);
  const std::string why =
      " was cancelled: " + failed->name() + " failed first (" + what_of(error_) + ")";
  for (TaskState *t : live_tasks())
    if (!t->started)
      completing_.push_back(
          {t, std::make_exception_ptr(Cancelled(t->name() + why, error_)), Outcome::cancelled});
  drain_completions();
}

// Nothing can happen any more: every running body is blocked in a wait
// that is not over (one that is over has only not woken yet), and no task
// is ready.
bool Core::stuck() const {
  if (sequential_ || running_ != blocked_in_wait_ || !ready_.empty() || device_pending_ > 0)
    return false;
  for (const std::function<bool()> *done : blocked_waits_)
    if ((*done)())
      return false;
  return true;
}

void Core::report_stuck() {
  // Name one chain that cannot finish: from the oldest blocked task along
  // unfinished dependencies to a task never spawned, or back to itself.
  TaskState *start = nullptr;
  for (TaskState *t : live_tasks())
    if ((t->phase == Phase::waiting_deps || t->phase == Phase::suspended) &&
        (start == nullptr || t->seq < start->seq))
      start = t;
  std::string message = "parla: the task graph cannot finish";
  if (start != nullptr) {
    std::vector<TaskState *> path{start};
    TaskState *cur = start;
    while (true) {
      TaskState *next = nullptr;
      for (TaskState *d : cur->waiting_on)
        if (!d->is_done()) {
          next = d;
          break;
        }
      if (next == nullptr) {
        for (const TaskRef &r : cur->requested_awaits)
          if (TaskState *d = find(r); d != nullptr && !d->is_done()) {
            next = d;
            break;
          }
      }
      if (next == nullptr)
        break;
      std::string chain;
      for (TaskState *p : path)
        chain += p->name() + " -> ";
      if (next->phase == Phase::placeholder) {
        message = "parla: " + chain + next->name() + ": " + next->name() + " was never spawned";
        break;
      }
      bool cycle = false;
      for (TaskState *p : path)
        cycle = cycle || p == next;
      if (cycle) {
        message = "parla: dependency cycle: " + chain + next->name();
        break;
      }
      path.push_back(next);
      cur = next;
    }
  }
  auto error = std::make_exception_ptr(GraphError(message));
  if (!error_)
    error_ = error;
  for (auto &space : spaces_)
    for (auto &[index, t] : space->tasks)
      if (t->phase == Phase::placeholder) {
        t->never_spawned = true;
        completing_.push_back({t.get(), error, Outcome::never_spawned});
      }
  for (TaskState *t : live_tasks())
    if (!t->started)
      completing_.push_back({t,
                             std::make_exception_ptr(Cancelled(
                                 t->name() + " was cancelled: " + message.substr(7), error)),
                             Outcome::cancelled});
  drain_completions();
}

void Core::wait_until(Lock &lock, const std::function<bool()> &done, const HelpsWith *helps_with) {
  if (sequential_) {
    while (!done()) {
      if (!sequential_queue_.empty()) {
        drain_sequential(lock);
        continue;
      }
      report_stuck();
    }
    if (graveyard_.size() >= kGraveyardBatch) // no worker frees them
      free_graveyard(lock);
    return;
  }
  // A thread of the program's own (Options::waiting_thread_helps) helps as
  // a worker would, on a trace track of its own after the workers'.
  struct Outsider {
    Core *core;
    ThreadContext saved;
    bool active;
    ~Outsider() {
      if (active) {
        core->outsider_tracks_[static_cast<size_t>(tl.worker) - core->workers_.size()] = false;
        tl = saved;
      }
    }
  } outsider{this, tl, outsiders_help_ && tl.core == nullptr};
  if (outsider.active) {
    tl.core = this;
    tl.worker = take_outsider_track();
  }
  const bool helping = tl.core == this && tl.worker >= 0;
  // The program's thread runs only what its wait is for: any other task
  // may wait for this very thread (a grandchild that finish() does not wait
  // for, waiting for what the program does after it), and would never end.
  // Run here, what it waits for would deadlock natively too.
  const HelpsWith *mine = outsider.active ? helps_with : nullptr;
  bool missed = false; // ready tasks, none of them mine: sleep, do not spin
  // A body blocked in a wait computes nothing: like a coroutine's await, it
  // lends its compute units (the task it waits for may need them) and
  // takes them back before it goes on.
  TaskState *self = helping ? tl.task : nullptr;
  const bool lent = self != nullptr && self->holds_compute;
  if (lent) {
    release_compute(self);
    retry_waiting();
  }
  // A body blocked in a wait counts for stuck(); a helping outside
  // thread runs no body while it waits.
  const bool blocked = helping && tl.task != nullptr;
  if (blocked) {
    ++blocked_in_wait_;
    blocked_waits_.push_back(&done);
  }
  bool spun = false; // the last spin saw nothing happen: sleep now
  while (!done()) {
    if (helping) {
      if (TaskState *t = mine != nullptr ? pop_ready_for(*mine) : pop_ready()) {
        run(lock, t, tl.worker);
        spun = false;
        continue;
      }
      missed = mine != nullptr && !ready_.empty();
    }
    if (stuck()) {
      // It completes or cancels what cannot finish; if that is not what
      // this wait waits for, the wait sleeps like any other (never spins).
      report_stuck();
      if (done() || !ready_.empty())
        continue;
    }
    if (helping && spin_us_ > 0 && !spun && !missed) {
      // As an idle worker does: a short spin catches the next ready task,
      // or a change that may end the wait, without a sleep and a wake-up
      // (a futex call on the completing thread for every task).
      const uint64_t seen = changes_.load(std::memory_order_relaxed);
      lock.unlock();
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us_);
      bool claimed = false;
      for (unsigned spins = 1;
           !(claimed = claim_ready()) && changes_.load(std::memory_order_relaxed) == seen &&
           (spins % 64 != 0 || std::chrono::steady_clock::now() < until);
           ++spins)
        cpu_relax();
      spun = !claimed && changes_.load(std::memory_order_relaxed) == seen;
      lock_briefly_spinning(lock);
      if (claimed)
        claims_.fetch_sub(1, std::memory_order_relaxed);
      continue;
    }
    spun = false;
    ++waiters_;
    helpers_ += helping;
    sleeping_waits_.push_back(&done);
    done_cv_.wait(lock);
    sleeping_waits_.erase(std::find(sleeping_waits_.begin(), sleeping_waits_.end(), &done));
    --waiters_;
    helpers_ -= helping;
  }
  if (blocked) {
    --blocked_in_wait_;
    blocked_waits_.erase(std::find(blocked_waits_.begin(), blocked_waits_.end(), &done));
  }
  if (lent) {
    wait_until(lock, [this, self] { return compute_fits(self); });
    take_compute(self);
  }
}

int Core::take_outsider_track() {
  size_t i =
      std::find(outsider_tracks_.begin(), outsider_tracks_.end(), false) - outsider_tracks_.begin();
  if (i == outsider_tracks_.size()) {
    outsider_tracks_.push_back(false);
    if (trace_)
      trace_->thread_name(Trace::kWorkers, static_cast<int>(workers_.size() + i),
                          "waiting thread " + std::to_string(i));
  }
  outsider_tracks_[i] = true;
  return static_cast<int>(workers_.size() + i);
}

// Wakes the waiters only when one of them has what it waits for: a thread
// in wait() would otherwise wake at every completion.
void Core::wake_waiters() {
  // What spinning waiters watch; written under mu_ only, so no atomic add.
  changes_.store(changes_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  for (const std::function<bool()> *done : sleeping_waits_)
    if ((*done)()) {
      done_cv_.notify_all();
      return;
    }
}

void Core::rethrow_error() {
  if (error_) {
    error_observed_ = true;
    std::rethrow_exception(error_);
  }
}

void Core::wait_all() {
  Lock lock(mu_);
  wait_until(lock, [this] { return unfinished_ == 0; });
  rethrow_error();
}

void Core::wait_space(SpaceState &space) {
  Lock lock(mu_);
  if (space.core != this && space.core != nullptr)
    throw Error("parla: task space " + space.name + " is in use by another runtime");
  const HelpsWith in_space = [&space](const TaskState &t) { return t.space == &space; };
  wait_until(
      lock, [&space] { return space.unfinished == 0; }, &in_space);
  rethrow_error();
}

void Core::wait_refs(const TaskRefs &refs) {
  Lock lock(mu_);
  std::vector<TaskState *> tasks;
  for (const TaskRef &r : refs)
    tasks.push_back(lookup(r).get());
  const HelpsWith listed = [&tasks](const TaskState &t) {
    return std::find(tasks.begin(), tasks.end(), &t) != tasks.end();
  };
  wait_until(
      lock,
      [&tasks] {
        for (TaskState *t : tasks)
          if (!t->is_done())
            return false;
        return true;
      },
      &listed);
  rethrow_error();
}

void Core::wait_task(TaskState &task) {
  Lock lock(mu_);
  const HelpsWith that = [&task](const TaskState &t) { return &t == &task; };
  wait_until(
      lock, [&task] { return task.is_done(); }, &that);
  if (task.error)
    error_observed_ = true;
}

void Core::finish(const std::function<void()> &block) {
  Scope scope;
  Scope *outer = tl.scope;
  tl.scope = &scope;
  std::exception_ptr block_error;
  try {
    block();
  } catch (...) {
    block_error = std::current_exception();
  }
  tl.scope = outer;
  Lock lock(mu_);
  // Tasks point at the scope until they are done: wait even after an error.
  const HelpsWith children = [&scope](const TaskState &t) { return t.scope == &scope; };
  wait_until(
      lock, [&scope] { return scope.pending == 0; }, &children);
  if (block_error) {
    lock.unlock();
    std::rethrow_exception(block_error);
  }
  rethrow_error();
}

bool Core::refs_done(const TaskRefs &refs) {
  Lock lock(mu_);
  for (const TaskRef &r : refs) {
    TaskState *t = find(r);
    if (t == nullptr || !t->is_done())
      return false;
  }
  return true;
}

void Core::rethrow_if_failed(const TaskRefs &refs) {
  Lock lock(mu_);
  for (const TaskRef &r : refs)
    if (TaskState *t = find(r); t != nullptr && t->error) {
      error_observed_ = true;
      std::rethrow_exception(t->error);
    }
}

Stats Core::stats() const {
  Lock lock(mu_);
  Stats s = stats_;
  for (const auto &space : spaces_)
    s.task_states += space->tasks.size() - space->retired;
  s.spaces = spaces_.size();
  return s;
}

void Core::write_trace(const std::string &path) const {
  Lock lock(mu_);
  if (!trace_)
    throw Error("parla: tracing is off (set Options::trace_path or PARLA_TRACE)");
  std::string why;
  if (!trace_->write(path, &why))
    throw Error("parla: cannot write the trace: " + why);
}

// The entry points task.hpp declares.
void set_result(TaskState &task, std::any value) {
  task.result = std::move(value);
}
void set_error(TaskState &task, std::exception_ptr error) {
  task.error = std::move(error);
}
void set_coroutine(TaskState &task, std::coroutine_handle<> handle) {
  task.coro = handle;
}
void await_refs(TaskState &task, TaskRefs refs) {
  task.core->await_refs(task, std::move(refs));
}
bool refs_done(TaskState &task, const TaskRefs &refs) {
  return task.core->refs_done(refs);
}
void rethrow_if_failed(TaskState &task, const TaskRefs &refs) {
  task.core->rethrow_if_failed(refs);
}
void wait_done(TaskState &task) {
  if (!task.done.load(std::memory_order_acquire))
    task.core->wait_task(task);
}
bool is_done(const TaskState &task) {
  return task.done.load(std::memory_order_acquire);
}
std::exception_ptr error_of(const TaskState &task) {
  return task.error;
}
const std::any &result_of(const TaskState &task) {
  return task.result;
}

} // namespace parla::detail
