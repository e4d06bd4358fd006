// SPDX-License-Identifier: MIT
// run_worker: the listener, one thread per guest, and an orderly stop on
// SIGINT/SIGTERM (or when the last guest left, with exit_when_idle).
#include "worker/server.hpp"

#include "transport/uring.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <list>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>

#include "worker/log.hpp"
#include "worker/session.hpp"

namespace ava {
namespace {

class Fd {
public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0)
      ::close(fd_);
  }
  Fd(const Fd &) = delete;
  Fd &operator=(const Fd &) = delete;
  int get() const { return fd_; }

private:
  int fd_;
};

// Restores the caller's signal mask when run_worker returns.
class BlockedSignals {
public:
  explicit BlockedSignals(const sigset_t &set) { ::pthread_sigmask(SIG_BLOCK, &set, &old_); }
  ~BlockedSignals() { ::pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  BlockedSignals(const BlockedSignals &) = delete;
  BlockedSignals &operator=(const BlockedSignals &) = delete;

private:
  sigset_t old_;
};

bool write_all(int fd, const std::string &text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

void drain(int fd) {
  uint8_t buf[256];
  while (::read(fd, buf, sizeof buf) > 0) {
  }
}

// The guests being served. Session threads report their end through done_fd
// so that the main thread can join them and notice when the worker is idle.
class Guests {
public:
  Guests(PluginSet &plugins, const WorkerOptions &options, int done_fd)
      : plugins_(plugins), options_(options), done_fd_(done_fd) {}
  ~Guests() { stop_all(); }
  Guests(const Guests &) = delete;
  Guests &operator=(const Guests &) = delete;

  void start(std::unique_ptr<Channel> channel) {
    std::lock_guard lock(mutex_);
    if (stopping_) {
      channel->shutdown();
      return;
    }
    auto &entry = entries_.emplace_back();
    entry.session = std::make_unique<GuestSession>(std::move(channel), plugins_, options_);
    ++served_;
    try {
      entry.thread = std::thread([this, &entry] {
        entry.session->serve();
        std::lock_guard inner(mutex_);
        entry.done = true;
        uint64_t one = 1;
        [[maybe_unused]] ssize_t n = ::write(done_fd_, &one, sizeof one);
      });
    } catch (const std::system_error &e) {
      worker_log(std::string("cannot start a thread for a new guest: ") + e.what());
      entries_.pop_back();
    }
  }

  // Joins finished sessions; returns how many remain.
  size_t reap() {
    std::list<Entry> finished;
    {
      std::lock_guard lock(mutex_);
      for (auto it = entries_.begin(); it != entries_.end();) {
        auto next = std::next(it);
        if (it->done)
          finished.splice(finished.end(), entries_, it);
        it = next;
      }
    }
    for (auto &entry : finished)
      entry.thread.join();
    std::lock_guard lock(mutex_);
    return entries_.size();
  }

  uint64_t served() {
    std::lock_guard lock(mutex_);
    return served_;
  }

  void stop_all() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
      for (auto &entry : entries_)
        entry.session->stop();
    }
    for (auto &entry : entries_)
      if (entry.thread.joinable())
        entry.thread.join();
    entries_.clear();
  }

private:
  struct Entry {
    std::unique_ptr<GuestSession> session;
    std::thread thread;
    bool done = false;
  };

  PluginSet &plugins_;
  const WorkerOptions &options_;
  int done_fd_;
  std::mutex mutex_;
  std::list<Entry> entries_; // std::list: threads keep references to their entry
  uint64_t served_ = 0;
  bool stopping_ = false;
};

void accept_loop(Listener &listener, Guests &guests) {
  bool failing = false;
  for (;;) {
    std::unique_ptr<Channel> channel;
    Status s = listener.accept(&channel, -1);
    if (s.code == AVA_E_CLOSED)
      return;
    if (!s.is_ok()) {
      // Typically EMFILE: say so once per streak and retry at a gentle pace.
      if (!failing)
        worker_log("accept failed: " + s.message);
      failing = true;
      ::poll(nullptr, 0, 100);
      continue;
    }
    failing = false;
    try {
      guests.start(std::move(channel));
    } catch (const std::bad_alloc &) {
      worker_log("out of memory; refusing a guest");
    }
  }
}

// Owns the accepting thread; stops it on every way out of serve().
class Acceptor {
public:
  explicit Acceptor(Listener &listener) : listener_(listener) {}
  ~Acceptor() { stop(); }
  Acceptor(const Acceptor &) = delete;
  Acceptor &operator=(const Acceptor &) = delete;

  Status start(Guests &guests) {
    try {
      thread_ = std::thread([this, &guests] { accept_loop(listener_, guests); });
    } catch (const std::system_error &e) {
      return Status::error(AVA_E_NOMEM,
                           std::string("cannot start the listener thread: ") + e.what());
    }
    return Status::ok();
  }
  void stop() {
    listener_.shutdown();
    if (thread_.joinable())
      thread_.join();
  }

private:
  Listener &listener_;
  std::thread thread_;
};

int serve(const WorkerOptions &options, int signal_fd) {
  PluginSet plugins(options.plugin_dir, options.specs);
  for (const std::string &name : options.specs) {
    const ava_worker_spec *spec = nullptr;
    Status found = plugins.find(name, &spec);
    if (!found.is_ok()) {
      worker_log("cannot serve spec '" + name + "': " + found.message);
      return 1;
    }
  }
  std::unique_ptr<Listener> listener;
  Status listening = listen_channel(options.listen, &listener);
  if (!listening.is_ok()) {
    worker_log("cannot listen on " + options.listen.to_string() + ": " + listening.message);
    return 1;
  }
  if (options.io_uring) {
    Status wrapped = wrap_listener_uring(std::move(listener), &listener);
    if (!wrapped.is_ok())
      worker_log("io_uring is not available, serving with plain sockets: " + wrapped.message);
  }
  std::string address = listener->address().to_string();
  if (options.ready_fd >= 0) {
    if (!write_all(options.ready_fd, address + "\n"))
      worker_log("cannot report the address on fd " + std::to_string(options.ready_fd) + ": " +
                 std::strerror(errno));
    ::close(options.ready_fd);
  }
  if (worker_debug_enabled())
    worker_log("listening on " + address);

  Fd done_fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (done_fd.get() < 0) {
    worker_log(std::string("eventfd: ") + std::strerror(errno));
    return 1;
  }
  Guests guests(plugins, options, done_fd.get());
  Acceptor acceptor(*listener);
  Status started = acceptor.start(guests);
  if (!started.is_ok()) {
    worker_log(started.message);
    return 1;
  }

  for (;;) {
    struct pollfd fds[2] = {{signal_fd, POLLIN, 0}, {done_fd.get(), POLLIN, 0}};
    int n = ::poll(fds, 2, -1);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      worker_log(std::string("poll: ") + std::strerror(errno));
      break;
    }
    if (fds[0].revents != 0) {
      signalfd_siginfo info;
      if (::read(signal_fd, &info, sizeof info) == sizeof info && worker_debug_enabled())
        worker_log("stopping on signal " + std::to_string(info.ssi_signo));
      break;
    }
    if (fds[1].revents != 0) {
      drain(done_fd.get());
      size_t active = guests.reap();
      if (options.exit_when_idle && active == 0 && guests.served() > 0)
        break;
    }
  }
  acceptor.stop();
  guests.stop_all();
  return 0;
}

} // namespace

Status serve_guest_until(std::unique_ptr<Channel> channel, PluginSet &plugins,
                         const WorkerOptions &options, int stop_fd) {
  try {
    GuestSession session(std::move(channel), plugins, options);
    Fd served(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (served.get() < 0)
      return Status::error(AVA_E_NOMEM, std::string("eventfd: ") + std::strerror(errno));
    // Wakes on stop_fd, or when the session ended by itself.
    std::thread stopper([&session, &served, stop_fd] {
      struct pollfd fds[2] = {{stop_fd, POLLIN, 0}, {served.get(), POLLIN, 0}};
      while (::poll(fds, 2, -1) < 0 && errno == EINTR) {
      }
      if (fds[1].revents == 0)
        session.stop();
    });
    Status result = session.serve();
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(served.get(), &one, sizeof one);
    stopper.join();
    return result;
  } catch (const std::bad_alloc &) {
    return Status::error(AVA_E_NOMEM, "out of memory");
  } catch (const std::system_error &e) {
    return Status::error(AVA_E_NOMEM, std::string("cannot start a thread: ") + e.what());
  }
}

int run_worker(const WorkerOptions &options) {
  // A guest vanishing mid-send must be an error return, not a dead worker.
  struct sigaction ignore = {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, nullptr);

  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  BlockedSignals blocked(stop_signals);
  Fd signal_fd(::signalfd(-1, &stop_signals, SFD_CLOEXEC | SFD_NONBLOCK));
  if (signal_fd.get() < 0) {
    worker_log(std::string("signalfd: ") + std::strerror(errno));
    return 1;
  }
  try {
    return serve(options, signal_fd.get());
  } catch (const std::bad_alloc &) {
    worker_log("out of memory");
    return 1;
  }
}

} // namespace ava
