// SPDX-License-Identifier: MIT
// The public Runtime: a thin face over detail::Core.
#include "parla/runtime.hpp"

#include <optional>

#include "src/core.hpp"

namespace parla {

Runtime::Runtime(Options options) : core_(std::make_unique<detail::Core>(std::move(options))) {}

Runtime::~Runtime() = default;

std::shared_ptr<detail::TaskState> Runtime::spawn_erased(const TaskRef &id, SpawnOptions options,
                                                         std::unique_ptr<detail::Body> body) {
  return core_->spawn(id, std::move(options), std::move(body));
}

std::shared_ptr<detail::TaskState> Runtime::state_of(const TaskRef &task) {
  return core_->state_of(task);
}

void Runtime::wait() {
  core_->wait_all();
}
void Runtime::wait(const TaskSpace &space) {
  core_->wait_space(*space.state());
}
void Runtime::wait(const TaskRefs &tasks) {
  core_->wait_refs(tasks);
}
void Runtime::finish(const std::function<void()> &block) {
  core_->finish(block);
}

const std::vector<Device *> &Runtime::devices() const {
  return core_->devices();
}

std::vector<Device *> Runtime::devices(Arch arch) const {
  std::vector<Device *> out;
  for (Device *d : core_->devices())
    if (d->arch() == arch)
      out.push_back(d);
  return out;
}

Device &Runtime::device(Arch arch, int index) const {
  for (Device *d : core_->devices())
    if (d->arch() == arch && d->index_in_arch() == index)
      return *d;
  throw Error("parla: there is no device " + std::string(to_string(arch)) + "(" +
              std::to_string(index) + ")");
}

bool Runtime::sequential() const {
  return core_->sequential();
}
unsigned Runtime::threads() const {
  return core_->threads();
}
Stats Runtime::stats() const {
  return core_->stats();
}
void Runtime::write_trace(const std::string &path) const {
  core_->write_trace(path);
}

Device &current_device() {
  if (detail::tl.task == nullptr || detail::tl.task->devices.empty())
    throw Error("parla: current_device() outside a task");
  return *detail::tl.task->devices.front();
}

const std::vector<Device *> &current_devices() {
  static const std::vector<Device *> none;
  return detail::tl.task == nullptr ? none : detail::tl.task->devices;
}

const TaskRef *current_task() {
  thread_local std::optional<TaskRef> ref;
  if (detail::tl.task == nullptr)
    return nullptr;
  ref.emplace(detail::tl.task->ref());
  return &*ref;
}

} // namespace parla
