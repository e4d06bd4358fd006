// SPDX-License-Identifier: MIT
// Placement, reservations, the ready queue and the workers.
//
// Placement policy (map, once a task's dependencies are done). Every
// option of the task's placement is a tuple of parts (an architecture or a
// device); a device is feasible for a part if its capacity holds the
// task's needs (memory <= capacity, vcus <= vcus). Parts are filled in
// order with distinct devices, each taking the feasible device of highest
//
//   score(d) = 30 * L(d) - 30 * N(d) - 10 * T(d) - 10 * M(d)
//   L(d) = bytes the task reads that are valid in d's memory space already /
//          bytes of all its accesses;  N(d) = 1 - L(d) (0 for a task with none)
//   T(d) = tasks mapped to d and not done / (1 + tasks mapped anywhere and not done)
//   M(d) = (memory reserved on d + memory of tasks mapped to d but not yet
//           holding it + this task's memory) / memory capacity of d
//
// (Parla's policy weighs bytes unnormalised, so that they swamp the load
// term; here every term lies in [0, 1] before its weight.) The option whose devices' mean score is
// highest wins; ties go to the first in a rotation that advances with every mapping, so equal
// devices take turns. T spreads tasks; M keeps tasks that need a device's whole memory apart, so
// that 8 such tasks on 4 devices queue two per device instead of eight on one.
#include <algorithm>
#include <cmath>
#include <thread>

#include "src/array_state.hpp"
#include "src/core.hpp"

namespace parla::detail {

namespace {

struct Need {
  uint64_t memory;
  uint32_t milli_vcus;
};

// vcus are checked positive, finite and at most 4e6 at spawn: the milli-vcus fit.
Need need_of(const Resources &defaults, uint64_t access_bytes, const Placement::Option *option) {
  const Resources &r = option != nullptr && option->resources ? *option->resources : defaults;
  return {r.memory.value_or(access_bytes), static_cast<uint32_t>(std::lround(r.vcus * 1000))};
}

Need need_of(const TaskState &t, const Placement::Option *option) {
  return need_of(t.default_resources, t.access_bytes, option);
}

// A part's feasible device for a task's need: the part names it (or its
// architecture, or nothing), and it holds the need.
bool feasible(const Placement::Part *part, const DeviceState &s, const Need &need) {
  const bool matches = part == nullptr || (std::holds_alternative<Arch>(*part)
                                               ? std::get<Arch>(*part) == s.device->arch()
                                               : std::get<Device *>(*part) == s.device);
  return matches && need.memory <= s.memory_capacity && need.milli_vcus <= s.milli_vcus_capacity;
}

// L(d): the share of the task's access bytes already valid in d's space
// (an array busy moving data counts as none there).
double locality(const TaskState &t, const Device &d) {
  if (t.access_bytes == 0)
    return 0;
  size_t local = 0;
  for (const auto &[a, mode] : t.accesses) {
    size_t n = 0;
    if (mode != Access::out &&
        a.state()->try_valid_bytes(d.memory_space(), a.offset(), a.offset() + a.bytes(), &n))
      local += n;
  }
  return static_cast<double>(local) / static_cast<double>(t.access_bytes);
}

// Devices a placement option has taken, without an allocation per spawn
// for the usual few devices.
class DeviceMask {
public:
  explicit DeviceMask(size_t devices) {
    if (devices > 64)
      many_.resize(devices);
  }
  bool test(size_t i) const { return many_.empty() ? (few_ >> i) & 1 : many_[i]; }
  void set(size_t i) {
    if (many_.empty())
      few_ |= uint64_t{1} << i;
    else
      many_[i] = true;
  }

private:
  uint64_t few_ = 0;
  std::vector<bool> many_;
};

std::string bytes_text(uint64_t b) {
  char buf[32];
  if (b >= (1ull << 30))
    std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(b) / (1ull << 30));
  else if (b >= (1ull << 20))
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(b) / (1ull << 20));
  else
    std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(b));
  return buf;
}

std::string option_text(const Placement::Option &o) {
  std::string s = "{";
  for (size_t i = 0; i < o.parts.size(); ++i) {
    s += i ? ", " : "";
    if (const Arch *a = std::get_if<Arch>(&o.parts[i]))
      s += to_string(*a);
    else
      s += std::get<Device *>(o.parts[i])->name();
  }
  return s + "}";
}

} // namespace

// An empty placement is one option of one part that any device matches.
static const std::vector<Placement::Option> &options_of(const Placement &placement) {
  static const std::vector<Placement::Option> anywhere{Placement::Option{}};
  return placement.anywhere() ? anywhere : placement.options();
}

static const std::vector<Placement::Option> &options_of(const TaskState &t) {
  return options_of(t.placement);
}

// Reads only what the constructor set (devices and capacities): the
// spawning thread checks before it takes the lock.
void Core::check_placeable(const Placement &placement, const Resources &defaults,
                           uint64_t access_bytes, const TaskRef &id) const {
  const auto name = [&id] { return id.space()->describe(id.index()); };
  std::string needs;
  for (const Placement::Option &o : options_of(placement)) {
    const Resources &r = o.resources ? *o.resources : defaults;
    if (!(r.vcus > 0) || !std::isfinite(r.vcus) || r.vcus > 4e6)
      throw Error("parla: task " + name() + " asks for " + std::to_string(r.vcus) +
                  " vcus; vcus must be a positive number, at most 4e6");
    const Need need = need_of(defaults, access_bytes, &o);
    DeviceMask used(device_states_.size());
    bool ok = true;
    const size_t parts = o.parts.empty() ? 1 : o.parts.size();
    for (size_t p = 0; p < parts && ok; ++p) {
      const Placement::Part *part = o.parts.empty() ? nullptr : &o.parts[p];
      if (part && std::holds_alternative<Device *>(*part)) {
        Device *d = std::get<Device *>(*part);
        if (std::find(device_list_.begin(), device_list_.end(), d) == device_list_.end())
          throw Error("parla: task " + name() + " is placed on a device of another runtime");
      }
      ok = false;
      for (size_t i = 0; i < device_states_.size() && !ok; ++i)
        if (!used.test(i) && feasible(part, device_states_[i], need)) {
          used.set(i);
          ok = true;
        }
    }
    if (ok)
      return;
    needs += (needs.empty() ? "" : "; or ") + (o.parts.empty() ? "any device" : option_text(o)) +
             " with " + bytes_text(need.memory) + " and " +
             std::to_string(need.milli_vcus / 1000.0) + " vcus each";
  }
  std::string have;
  for (const DeviceState &s : device_states_)
    have += (have.empty() ? "" : ", ") + s.device->name() + " " + bytes_text(s.memory_capacity) +
            " " + std::to_string(s.milli_vcus_capacity / 1000.0) + " vcus";
  throw Error("parla: task " + name() + " cannot be placed: it needs " + needs +
              "; the devices have " + have);
}

void Core::map(TaskState *t) {
  const std::vector<Placement::Option> &options = options_of(*t);
  // One option of one device, which only one device can take (a task
  // placed on a device, or on an architecture of one device): no scores to
  // weigh. The commonest case of a stream of small tasks.
  if (options.size() == 1 && options.front().parts.size() <= 1) {
    const Placement::Option &o = options.front();
    const Placement::Part *part = o.parts.empty() ? nullptr : &o.parts.front();
    const Need need = need_of(*t, &o);
    size_t only = device_states_.size(), count = 0;
    for (size_t i = 0; i < device_states_.size() && count < 2; ++i)
      if (feasible(part, device_states_[i], need)) {
        only = i;
        ++count;
      }
    if (count == 1) {
      ++rr_;
      t->devices.assign(1, device_states_[only].device);
      take_mapping(t, need.memory, need.milli_vcus);
      return;
    }
  }
  uint64_t total_mapped = 0;
  for (const DeviceState &s : device_states_)
    total_mapped += s.mapped_tasks;
  const size_t n = device_states_.size();
  double best_score = -1e300;
  std::vector<Device *> &best = map_best_; // reused: no allocation per spawn
  best.clear();
  const Placement::Option *best_option = nullptr;
  for (const Placement::Option &o : options) {
    const Need need = need_of(*t, &o);
    DeviceMask used(n);
    std::vector<Device *> &chosen = map_chosen_; // reused: no allocation per spawn
    chosen.clear();
    double sum = 0;
    const size_t parts = o.parts.empty() ? 1 : o.parts.size();
    for (size_t p = 0; p < parts; ++p) {
      const Placement::Part *part = o.parts.empty() ? nullptr : &o.parts[p];
      double part_best = -1e300;
      size_t pick = n;
      for (size_t k = 0; k < n; ++k) {
        const size_t i = (k + rr_) % n;
        const DeviceState &s = device_states_[i];
        if (used.test(i) || !feasible(part, s, need))
          continue;
        const double load =
            static_cast<double>(s.mapped_tasks) / (1.0 + static_cast<double>(total_mapped));
        const double memory =
            s.memory_capacity == 0
                ? 0
                : static_cast<double>(s.memory_reserved + s.mapped_memory + need.memory) /
                      static_cast<double>(s.memory_capacity);
        const double local = locality(*t, *s.device);
        const double score =
            30 * local - 30 * (t->access_bytes ? 1 - local : 0) - 10 * load - 10 * memory;
        if (score > part_best) {
          part_best = score;
          pick = i;
        }
      }
      if (pick == n) {
        chosen.clear();
        break;
      }
      used.set(pick);
      chosen.push_back(device_states_[pick].device);
      sum += part_best;
    }
    if (chosen.empty())
      continue;
    const double score = sum / static_cast<double>(chosen.size());
    if (score > best_score) {
      best_score = score;
      best.assign(chosen.begin(), chosen.end());
      best_option = &o;
    }
  }
  ++rr_;
  // check_placeable made sure some option fits.
  t->devices.assign(best.begin(), best.end());
  const Need need = need_of(*t, best_option);
  take_mapping(t, need.memory, need.milli_vcus);
}

void Core::take_mapping(TaskState *t, uint64_t memory, uint32_t milli_vcus) {
  t->memory = memory;
  t->milli_vcus = milli_vcus;
  for (Device *d : t->devices) {
    DeviceState &s = device_states_[static_cast<size_t>(d->id())];
    ++s.mapped_tasks;
    s.mapped_memory += t->memory;
  }
  t->phase = Phase::waiting_memory;
  try_reserve_memory(t);
}

void Core::try_reserve_memory(TaskState *t) {
  bool fits = true;
  for (Device *d : t->devices) {
    const DeviceState &s = device_states_[static_cast<size_t>(d->id())];
    fits = fits && (sequential_ ||
                    (s.memory_waiters == 0 && s.memory_reserved + t->memory <= s.memory_capacity));
  }
  if (!fits) {
    t->phase = Phase::waiting_memory;
    for (Device *d : t->devices) {
      DeviceState &s = device_states_[static_cast<size_t>(d->id())];
      ++s.memory_waiters;
      s.memory_queue.push_back(t);
    }
    return;
  }
  reserve_memory(t);
}

void Core::reserve_memory(TaskState *t) {
  for (Device *d : t->devices) {
    DeviceState &s = device_states_[static_cast<size_t>(d->id())];
    s.memory_reserved += t->memory;
    s.mapped_memory -= t->memory;
    if (trace_ && t->memory != 0)
      trace_->counter("memory " + d->name(), now_us(), "reserved",
                      static_cast<double>(s.memory_reserved));
  }
  t->holds_memory = true;
  t->phase = Phase::waiting_compute;
  try_reserve_compute(t);
}

void Core::try_reserve_compute(TaskState *t) {
  bool fits = true;
  for (Device *d : t->devices) {
    const DeviceState &s = device_states_[static_cast<size_t>(d->id())];
    fits =
        fits && (sequential_ || (s.compute_waiters == 0 &&
                                 s.milli_vcus_reserved + t->milli_vcus <= s.milli_vcus_capacity));
  }
  if (!fits) {
    t->phase = Phase::waiting_compute;
    for (Device *d : t->devices) {
      DeviceState &s = device_states_[static_cast<size_t>(d->id())];
      ++s.compute_waiters;
      s.compute_queue.push_back(t);
    }
    return;
  }
  reserve_compute(t);
}

void Core::reserve_compute(TaskState *t) {
  take_compute(t);
  push_ready(t);
}

bool Core::compute_fits(const TaskState *t) const {
  for (Device *d : t->devices) {
    const DeviceState &s = device_states_[static_cast<size_t>(d->id())];
    if (s.milli_vcus_reserved + t->milli_vcus > s.milli_vcus_capacity)
      return false;
  }
  return true;
}

void Core::take_compute(TaskState *t) {
  for (Device *d : t->devices) {
    DeviceState &s = device_states_[static_cast<size_t>(d->id())];
    s.milli_vcus_reserved += t->milli_vcus;
    if (trace_)
      trace_->counter("vcus " + d->name(), now_us(), "reserved", s.milli_vcus_reserved / 1000.0);
  }
  t->holds_compute = true;
}

void Core::release_compute(TaskState *t) {
  for (Device *d : t->devices) {
    DeviceState &s = device_states_[static_cast<size_t>(d->id())];
    s.milli_vcus_reserved -= t->milli_vcus;
    if (trace_)
      trace_->counter("vcus " + d->name(), now_us(), "reserved", s.milli_vcus_reserved / 1000.0);
  }
  t->holds_compute = false;
  // A body blocked in a wait may be waiting to take its units back.
  wake_waiters();
}

void Core::release_memory(TaskState *t) {
  for (Device *d : t->devices) {
    DeviceState &s = device_states_[static_cast<size_t>(d->id())];
    s.memory_reserved -= t->memory;
    if (trace_ && t->memory != 0)
      trace_->counter("memory " + d->name(), now_us(), "reserved",
                      static_cast<double>(s.memory_reserved));
  }
  t->holds_memory = false;
}

// Waiting tasks are served first come, first served per device: a task
// goes once it is at the front of every one of its devices' queues and
// fits on each. Each step looks only at queue fronts, so a long queue for
// one device costs nothing when another frees up.
void Core::retry_waiting() {
  // A queue whose waiter count is 0 holds only tasks that left it (done,
  // or reserved through another device's queue): nothing to look at, and
  // called at every completion.
  const auto waiting = [](std::deque<TaskState *> &q, uint32_t waiters) {
    if (waiters == 0 && !q.empty())
      q.clear();
    return waiters != 0;
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (DeviceState &s : device_states_)
      while (waiting(s.memory_queue, s.memory_waiters) && reserve_front(s.memory_queue, true))
        progress = true;
    for (DeviceState &s : device_states_)
      while (waiting(s.compute_queue, s.compute_waiters) && reserve_front(s.compute_queue, false))
        progress = true;
  }
}

bool Core::reserve_front(std::deque<TaskState *> &q, bool memory) {
  const Phase phase = memory ? Phase::waiting_memory : Phase::waiting_compute;
  const auto drop_finished = [phase](std::deque<TaskState *> &queue) {
    while (!queue.empty() && (queue.front()->phase != phase || queue.front()->is_done()))
      queue.pop_front();
  };
  drop_finished(q);
  if (q.empty())
    return false;
  TaskState *t = q.front();
  for (Device *d : t->devices) {
    DeviceState &s = device_states_[static_cast<size_t>(d->id())];
    std::deque<TaskState *> &other = memory ? s.memory_queue : s.compute_queue;
    drop_finished(other);
    if (other.empty() || other.front() != t ||
        !(memory ? s.memory_reserved + t->memory <= s.memory_capacity
                 : s.milli_vcus_reserved + t->milli_vcus <= s.milli_vcus_capacity))
      return false;
  }
  for (Device *d : t->devices) {
    DeviceState &s = device_states_[static_cast<size_t>(d->id())];
    (memory ? s.memory_queue : s.compute_queue).pop_front();
    (memory ? s.memory_waiters : s.compute_waiters)--;
  }
  // Reserving memory may queue the task for compute: the other queue.
  if (memory)
    reserve_memory(t);
  else
    reserve_compute(t);
  return true;
}

void Core::push_ready(TaskState *t) {
  t->phase = Phase::ready;
  if (sequential_) {
    sequential_queue_.push({t->seq, t});
    return;
  }
  ready_.push_back(t);
  ready_count_.store(ready_.size(), std::memory_order_relaxed);
  if (tl.core == this && tl.will_pop)
    tl.will_pop = false; // this worker takes one itself
  else if (sleepers_ > 0)
    work_cv_.notify_one();
  if (helpers_ > 0)
    done_cv_.notify_all();
}

TaskState *Core::pop_ready() {
  while (!ready_.empty()) {
    TaskState *t = ready_.front();
    ready_.pop_front();
    ready_count_.store(ready_.size(), std::memory_order_relaxed);
    if (t->phase == Phase::ready) {
      ++running_;
      return t;
    }
  }
  return nullptr;
}

TaskState *Core::pop_ready_for(const HelpsWith &mine) {
  TaskState *found = nullptr;
  for (auto it = ready_.begin(); it != ready_.end();) {
    if ((*it)->phase != Phase::ready) {
      it = ready_.erase(it);
    } else if (mine(**it)) {
      found = *it;
      ready_.erase(it);
      ++running_;
      break;
    } else {
      ++it;
    }
  }
  ready_count_.store(ready_.size(), std::memory_order_relaxed);
  return found;
}

// A spinning worker takes the lock only for a ready task no other
// spinner went for: two workers rushing at each task a spawn made ready
// held the lock twice, and the spawning thread (the bottleneck of a stream
// of small tasks) waited for both.
bool Core::claim_ready() {
  size_t claims = claims_.load(std::memory_order_relaxed);
  while (claims < ready_count_.load(std::memory_order_relaxed))
    if (claims_.compare_exchange_weak(claims, claims + 1, std::memory_order_relaxed))
      return true;
  return false;
}

void Core::worker_main(int worker) {
  tl.core = this;
  tl.worker = worker;
  Lock lock(mu_);
  while (true) {
    if (TaskState *t = pop_ready()) {
      run(lock, t, worker);
      // In batches: each one costs a release and a retake of the lock.
      if (graveyard_.size() >= kGraveyardBatch)
        free_graveyard(lock);
      continue;
    }
    if (!graveyard_.empty() || !dropped_spaces_.empty()) { // idle: nothing else to do
      free_graveyard(lock);
      continue;
    }
    if (stop_)
      break;
    if (spin_us_ > 0) {
      // A short spin catches the next task of a chain without a sleep and
      // wake-up (~70 µs here); past its budget the worker sleeps.
      lock.unlock();
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us_);
      bool claimed = false;
      for (unsigned spins = 1;
           !(claimed = claim_ready()) && !stop_.load(std::memory_order_relaxed) &&
           (spins % 64 != 0 || std::chrono::steady_clock::now() < until);
           ++spins)
        cpu_relax(); // the clock is read every 64 spins: reading it costs more than a spin
      lock_briefly_spinning(lock);
      if (claimed)
        claims_.fetch_sub(1, std::memory_order_relaxed);
      if (!ready_.empty() || stop_)
        continue;
    }
    ++sleepers_;
    work_cv_.wait(lock);
    --sleepers_;
  }
}

void Core::run(Lock &lock, TaskState *t, int worker) {
  t->phase = Phase::running;
  t->started = true;
  t->worker = worker;
  const bool tracing = trace_ != nullptr;
  if (tracing) {
    t->start_us = now_us();
    t->lanes.clear();
    for (Device *d : t->devices) {
      auto &busy = device_states_[static_cast<size_t>(d->id())].lanes_busy;
      size_t lane = std::find(busy.begin(), busy.end(), false) - busy.begin();
      if (lane == busy.size()) {
        busy.push_back(false);
        trace_->thread_name(Trace::kDevices, d->id() * 1000 + static_cast<int>(lane),
                            d->name() + " lane " + std::to_string(lane));
      }
      busy[lane] = true;
      t->lanes.push_back(static_cast<int>(lane));
    }
    for (TaskState *d : t->waiting_on)
      if (d->worker >= 0)
        trace_->flow(++flows_, Trace::kWorkers, d->worker, d->end_us, Trace::kWorkers, worker,
                     t->start_us);
  }
  const ThreadContext outer = tl;
  tl.task = t;
  tl.scope = nullptr; // spawns in a body belong to no finish() of this thread
  std::exception_ptr error;
  bool armed = false;   // the task ends in its devices' callbacks
  uint32_t unarmed = 0; // devices that will not call back
  try {
    if (!t->device_deps.empty() && !t->coro)
      queue_after_device_deps(lock, t);
    if (!t->coro && !t->accesses.empty())
      prepare_accesses(lock, t);
    lock.unlock();
    if (!t->coro)
      t->body->start(*t);
    if (t->coro)
      t->coro.resume();
    // A task that ends now (not a coroutine that awaits, nor one whose
    // promise kept an error) need not hold its worker while its devices
    // work; sequential mode keeps every step on the spawning thread.
    const bool ends = (!t->coro || t->coro.done()) && !t->error;
    if (ends && runahead_ && !sequential_)
      armed = record_device_events(t, &unarmed, &error);
    else
      for (Device *d : t->devices)
        d->synchronize();
  } catch (...) {
    error = std::current_exception();
  }
  if (!lock.owns_lock())
    lock_briefly_spinning(lock);
  tl = outer;
  --running_;
  if (tracing) {
    t->end_us = now_us();
    std::string devices;
    for (Device *d : t->devices)
      devices += (devices.empty() ? "" : ",") + d->name();
    const std::string args = "{\"devices\":" + json_string(devices) + "}";
    trace_->slice(Trace::kWorkers, worker, t->name(), "task", t->start_us, t->end_us - t->start_us,
                  args);
    // A task that runs ahead holds its lanes until its device work is done.
    if (!armed)
      end_device_slices(t, t->end_us);
  }
  // A worker takes the next ready task itself; a thread of the program's
  // own takes only what its wait is for, so it wakes a worker as others do.
  tl.will_pop =
      tl.core == this && tl.worker >= 0 && static_cast<size_t>(tl.worker) < workers_.size();
  if (armed) {
    // Its compute goes to the next task for the device, whose work queues
    // behind this one's; the last callback (or this) completes it.
    t->phase = Phase::device_pending;
    release_compute(t);
    ++device_pending_;
    if (error && !t->device_error)
      t->device_error = error;
    release_dependents_early(t);
    end_device_wait(t, unarmed + 1);
    retry_waiting();
  } else {
    after_run(t, error);
  }
  tl.will_pop = false;
  // A waiter judges a graph error only when nothing runs: tell it when that
  // happened without a completion (the last body suspended).
  if (waiters_ > 0 && stuck())
    done_cv_.notify_all();
}

bool Core::record_device_events(TaskState *t, uint32_t *unarmed, std::exception_ptr *error) {
  // One more than the devices: the callbacks cannot complete the task
  // before run() has put it in device_pending (end_device_wait).
  t->device_waits = static_cast<uint32_t>(t->devices.size()) + 1;
  t->events.clear();
  for (Device *d : t->devices) {
    try {
      if (auto e = d->record([this, t](std::exception_ptr e) { device_done(t, std::move(e)); })) {
        t->events.push_back(std::move(e));
        continue;
      }
      d->synchronize();
    } catch (...) {
      if (!*error)
        *error = std::current_exception();
    }
    ++*unarmed;
  }
  if (t->events.empty())
    t->device_waits = 0; // every device was waited for here
  return !t->events.empty();
}

void Core::device_done(TaskState *t, std::exception_ptr error) {
  Lock lock(mu_, std::defer_lock);
  lock_briefly_spinning(lock);
  if (error && !t->device_error)
    t->device_error = std::move(error);
  end_device_wait(t, 1);
}

void Core::end_device_slices(TaskState *t, double end) {
  for (size_t i = 0; i < t->devices.size(); ++i) {
    Device *d = t->devices[i];
    trace_->slice(Trace::kDevices, d->id() * 1000 + t->lanes[i], t->name(), "device", t->start_us,
                  end - t->start_us);
    device_states_[static_cast<size_t>(d->id())].lanes_busy[static_cast<size_t>(t->lanes[i])] =
        false;
  }
}

void Core::end_device_wait(TaskState *t, uint32_t count) {
  t->device_waits -= count;
  if (t->device_waits != 0)
    return;
  if (trace_)
    end_device_slices(t, now_us());
  --device_pending_;
  after_run(t, std::move(t->device_error));
}

bool Core::on_event_devices_only(TaskState *t) {
  if (t->event_devices_only >= 0)
    return t->event_devices_only != 0;
  bool only = true;
  for (const Placement::Option &o : options_of(*t)) {
    const size_t parts = o.parts.empty() ? 1 : o.parts.size();
    for (size_t p = 0; p < parts && only; ++p) {
      const Placement::Part *part = o.parts.empty() ? nullptr : &o.parts[p];
      for (const DeviceState &s : device_states_) {
        const bool matches = part == nullptr || (std::holds_alternative<Arch>(*part)
                                                     ? std::get<Arch>(*part) == s.device->arch()
                                                     : std::get<Device *>(*part) == s.device);
        only = only && (!matches || s.device->has_events());
      }
    }
  }
  t->event_devices_only = only ? 1 : 0;
  return only;
}

void Core::release_dependents_early(TaskState *t) {
  for (TaskState *d : t->dependents) {
    // A coroutine's body may await, on the host: it keeps the plain rule.
    if (d->is_done() || d->phase != Phase::waiting_deps || (d->body && d->body->coroutine()) ||
        !on_event_devices_only(d))
      continue;
    d->device_deps.push_back(t);
    if (--d->pending_deps == 0)
      map(d);
  }
}

void Core::queue_after_device_deps(Lock &lock, TaskState *t) {
  std::vector<std::shared_ptr<DeviceEvent>> events;
  for (TaskState *dep : t->device_deps)
    if (!dep->is_done())
      events.insert(events.end(), dep->events.begin(), dep->events.end());
  if (events.empty())
    return;
  lock.unlock();
  // An event no queue of the task can wait for (another context) is waited
  // for here: slower, never wrong.
  std::vector<bool> waited(events.size(), false);
  for (Device *d : t->devices)
    for (size_t i = 0; i < events.size(); ++i)
      if (!waited[i] && !d->queue_after(*events[i])) {
        events[i]->wait();
        waited[i] = true;
      }
  events.clear();
  lock.lock();
}

void Core::after_run(TaskState *t, std::exception_ptr error) {
  if (!error && t->coro && !t->coro.done()) {
    // The coroutine awaits: it gives its compute back and continues on the
    // same devices once what it awaits is done.
    release_compute(t);
    t->phase = Phase::suspended;
    t->pending_awaits = 0;
    for (const TaskRef &r : t->requested_awaits) {
      TaskState *d = lookup(r).get();
      if (d != t && !d->is_done()) {
        d->awaiters.push_back(t);
        ++t->pending_awaits;
      }
    }
    if (t->pending_awaits == 0) {
      t->phase = Phase::waiting_compute;
      try_reserve_compute(t);
    }
    retry_waiting();
    return;
  }
  if (!error)
    error = t->error; // a coroutine's exception, kept by its promise
  if (!t->device_deps.empty()) {
    // Its work ran after theirs, but they complete first: a dependency's
    // dependents list must never name a task that completed (and retired).
    t->completion_deferred = true;
    t->device_error = std::move(error);
    ++device_pending_;
    if (t->holds_compute) { // its own work is done (synchronize())
      release_compute(t);
      retry_waiting();
    }
    return;
  }
  if (error) {
    complete(t, error, Outcome::failed);
    fail_fast(t, error);
  } else {
    complete(t, nullptr, Outcome::completed);
  }
}

void Core::prepare_accesses(Lock &lock, TaskState *t) {
  Device &d = *t->devices.front();
  DeviceState &s = device_states_[static_cast<size_t>(d.id())];
  std::erase_if(s.arrays, [](const std::weak_ptr<ArrayState> &w) { return w.expired(); });
  for (const auto &[a, mode] : t->accesses) {
    bool known = false;
    for (const auto &w : s.arrays)
      known = known || w.lock() == a.state();
    if (!known)
      s.arrays.push_back(a.state());
  }
  const double start = trace_ ? now_us() : 0;
  lock.unlock();
  for (const auto &[a, mode] : t->accesses)
    detail::prepare_access(a, mode, d);
  lock.lock();
  if (trace_) {
    const double end = now_us();
    trace_->slice(Trace::kWorkers, t->worker, "data for " + t->name(), "copy", start, end - start);
    t->start_us = end; // the task's own slice starts after its data is there
  }
}

void Core::drain_sequential(Lock &lock) {
  const bool outer = !draining_;
  draining_ = true;
  while (!sequential_queue_.empty()) {
    TaskState *t = sequential_queue_.top().second;
    sequential_queue_.pop();
    if (t->phase != Phase::ready)
      continue;
    ++running_;
    run(lock, t, 0);
  }
  if (outer)
    draining_ = false;
}

} // namespace parla::detail
