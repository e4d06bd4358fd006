// SPDX-License-Identifier: MIT
// What spawn returns and what task bodies are: a TaskHandle<T> is the
// task's future (get() waits and returns its value or rethrows its error);
// a body is a callable, or a coroutine returning Coro<T> that may
// `co_await` other tasks (a handle, a TaskRef, or several). An awaiting
// coroutine gives its compute units back while it waits, and continues on
// the same device once they are free again.
#pragma once

#include <any>
#include <coroutine>
#include <exception>
#include <memory>
#include <type_traits>
#include <utility>

#include "parla/task_space.hpp"

namespace parla {

namespace detail {
struct TaskState;

// The type-erased body the runtime starts on a worker.
struct Body {
  virtual ~Body() = default;
  virtual void start(TaskState &task) = 0;
  // Whether start() makes a coroutine (which may await).
  virtual bool coroutine() const = 0;
};

// Implemented by the runtime (parla/src/core.cpp).
void set_result(TaskState &task, std::any value);
void set_error(TaskState &task, std::exception_ptr error);
void set_coroutine(TaskState &task, std::coroutine_handle<> handle);
// The coroutine of `task` suspends until `refs` are done.
void await_refs(TaskState &task, TaskRefs refs);
bool refs_done(TaskState &task, const TaskRefs &refs);
void rethrow_if_failed(TaskState &task, const TaskRefs &refs);
// Blocks until the task is done; a worker thread runs other tasks meanwhile.
void wait_done(TaskState &task);
bool is_done(const TaskState &task);
std::exception_ptr error_of(const TaskState &task);
const std::any &result_of(const TaskState &task);
} // namespace detail

template <class T> class TaskHandle {
public:
  TaskHandle(std::shared_ptr<detail::TaskState> state, TaskRef ref)
      : state_(std::move(state)), ref_(std::move(ref)) {}
  // Waits for the task; its value, or its error rethrown.
  T get() const {
    detail::wait_done(*state_);
    if (std::exception_ptr e = detail::error_of(*state_))
      std::rethrow_exception(e);
    if constexpr (!std::is_void_v<T>)
      return std::any_cast<T>(detail::result_of(*state_));
  }
  void wait() const { detail::wait_done(*state_); }
  bool done() const { return detail::is_done(*state_); }
  const TaskRef &ref() const { return ref_; }
  operator TaskRef() const { return ref_; }
  operator TaskRefs() const { return TaskRefs(ref_); }

private:
  std::shared_ptr<detail::TaskState> state_;
  TaskRef ref_;
};

template <class T = void> class Coro;

namespace detail {

struct RefsAwaiter {
  TaskState *task;
  TaskRefs refs;
  bool await_ready() const { return refs_done(*task, refs); }
  void await_suspend(std::coroutine_handle<>) { await_refs(*task, refs); }
  void await_resume() const { rethrow_if_failed(*task, refs); }
};

template <class U> struct HandleAwaiter {
  TaskState *task;
  TaskHandle<U> handle;
  bool await_ready() const { return handle.done(); }
  void await_suspend(std::coroutine_handle<>) { await_refs(*task, TaskRefs(handle.ref())); }
  U await_resume() const { return handle.get(); }
};

struct PromiseBase {
  TaskState *task = nullptr; // set before the first resume
  std::suspend_always initial_suspend() noexcept { return {}; }
  // The runtime destroys the frame once it sees the coroutine done.
  std::suspend_always final_suspend() noexcept { return {}; }
  void unhandled_exception() { set_error(*task, std::current_exception()); }
  RefsAwaiter await_transform(TaskRef ref) { return {task, TaskRefs(std::move(ref))}; }
  RefsAwaiter await_transform(TaskRefs refs) { return {task, std::move(refs)}; }
  template <class U> HandleAwaiter<U> await_transform(TaskHandle<U> handle) {
    return {task, std::move(handle)};
  }
};

template <class T> struct Promise : PromiseBase {
  Coro<T> get_return_object();
  void return_value(T value) { set_result(*task, std::any(std::move(value))); }
};
template <> struct Promise<void> : PromiseBase {
  Coro<void> get_return_object();
  void return_void() {}
};

} // namespace detail

template <class T> class Coro {
public:
  using promise_type = detail::Promise<T>;
  using value_type = T;
  Coro(Coro &&other) noexcept : handle_(std::exchange(other.handle_, {})) {}
  Coro &operator=(Coro &&) = delete;
  ~Coro() {
    if (handle_)
      handle_.destroy();
  }
  // Hands the coroutine to the task that runs it.
  void bind(detail::TaskState &task) {
    handle_.promise().task = &task;
    detail::set_coroutine(task, std::exchange(handle_, {}));
  }

private:
  friend struct detail::Promise<T>;
  explicit Coro(std::coroutine_handle<promise_type> h) : handle_(h) {}
  std::coroutine_handle<promise_type> handle_;
};

namespace detail {
template <class T> Coro<T> Promise<T>::get_return_object() {
  return Coro<T>(std::coroutine_handle<Promise<T>>::from_promise(*this));
}
inline Coro<void> Promise<void>::get_return_object() {
  return Coro<void>(std::coroutine_handle<Promise<void>>::from_promise(*this));
}

template <class R> struct BodyResult {
  using type = R;
  static constexpr bool coroutine = false;
};
template <class T> struct BodyResult<Coro<T>> {
  using type = T;
  static constexpr bool coroutine = true;
};

template <class F> struct CallableBody final : Body {
  explicit CallableBody(F f) : fn(std::move(f)) {}
  void start(TaskState &task) override {
    using R = std::invoke_result_t<F &>;
    if constexpr (BodyResult<R>::coroutine)
      fn().bind(task);
    else if constexpr (std::is_void_v<R>)
      fn();
    else
      set_result(task, std::any(fn()));
  }
  bool coroutine() const override { return BodyResult<std::invoke_result_t<F &>>::coroutine; }
  F fn;
};
} // namespace detail

} // namespace parla
