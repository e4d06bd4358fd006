// SPDX-License-Identifier: MIT
#include "tools/ava/supervisor.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>

#include "tools/ava/guest_cgroup.hpp"
#include "tools/ava/process.hpp"

namespace ava::tool {
namespace {

// An acceptor that failed for want of descriptors or memory tries again
// when a worker ends, or after this long at the latest.
constexpr std::chrono::seconds kAcceptRetryBackstop{5};

void log(const std::string &line) {
  std::fprintf(stderr, "ava worker: %s\n", line.c_str());
}

std::string errno_text(const std::string &what, int err) {
  return what + ": " + std::strerror(err);
}

std::string describe_exit(int wait_status) {
  if (WIFSIGNALED(wait_status))
    return "was killed by signal " + std::to_string(WTERMSIG(wait_status)) + " (" +
           strsignal(WTERMSIG(wait_status)) + ")";
  return "exited with status " + std::to_string(WEXITSTATUS(wait_status));
}

bool write_text(int fd, const std::string &text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

struct Child {
  uint64_t serial = 0;
  std::string peer;
  std::unique_ptr<GuestCgroup> cgroup;
};

// Who is at the other end of an accepted connection, for per-peer budgets:
// the kernel's word for it (SO_PEERCRED, the peer's address), never the
// guest's. Other families count as one peer each.
std::string peer_of(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len) != 0)
    return "unknown peer";
  if (addr.ss_family == AF_UNIX) {
    ucred cred{};
    socklen_t clen = sizeof cred;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0)
      return "uid " + std::to_string(cred.uid);
    return "unknown unix peer";
  }
  len = sizeof addr;
  if (::getpeername(fd, reinterpret_cast<sockaddr *>(&addr), &len) != 0)
    return "unknown peer";
  char text[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET)
    ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in *>(&addr)->sin_addr, text, sizeof text);
  else if (addr.ss_family == AF_INET6)
    ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6 *>(&addr)->sin6_addr, text, sizeof text);
  else
    return "peer of family " + std::to_string(addr.ss_family);
  return std::string("address ") + text;
}

class Supervisor {
public:
  Supervisor(const SupervisorOptions &options, Listener &listener, SignalWatch &signals)
      : options_(options), listener_(listener), signals_(signals) {}

  int run();

private:
  void accept_loop();
  void start_worker(Fd connection);
  // Reaps every worker that is done; returns how many remain.
  size_t reap();
  void stop_all();

  const SupervisorOptions &options_;
  Listener &listener_;
  SignalWatch &signals_;
  std::mutex mutex_;                     // children_, served_, workers_ended_, stopping_
  std::condition_variable resources_cv_; // a worker ended, or stopping_
  std::map<pid_t, Child> children_;
  uint64_t served_ = 0;
  uint64_t workers_ended_ = 0;
  bool stopping_ = false;
};

void Supervisor::accept_loop() {
  bool failing = false;
  for (;;) {
    int fd = -1;
    Status st = listener_.accept_connection(&fd, -1);
    if (st.code == AVA_E_CLOSED)
      return;
    if (!st.is_ok()) {
      // Typically EMFILE or ENOMEM: say so once per streak, and try again
      // once a worker ended (which gives descriptors and memory back), or
      // after a long backstop for causes no worker's end cures.
      if (!failing)
        log("accept failed: " + st.message);
      failing = true;
      std::unique_lock lock(mutex_);
      const uint64_t ended = workers_ended_;
      resources_cv_.wait_for(lock, kAcceptRetryBackstop,
                             [&] { return stopping_ || workers_ended_ != ended; });
      if (stopping_)
        return;
      continue;
    }
    failing = false;
    start_worker(Fd(fd));
  }
}

void Supervisor::start_worker(Fd connection) {
  uint64_t serial;
  {
    std::lock_guard lock(mutex_);
    serial = ++served_;
  }
  Child child;
  child.serial = serial;
  child.peer = peer_of(connection.get());
  const std::string name = "guest connection " + std::to_string(serial);
  {
    std::lock_guard lock(mutex_);
    const size_t of_peer = static_cast<size_t>(
        std::count_if(children_.begin(), children_.end(),
                      [&](const auto &entry) { return entry.second.peer == child.peer; }));
    std::string why;
    if (options_.max_connections != 0 && children_.size() >= options_.max_connections)
      why = std::to_string(children_.size()) + " connections are served (guest.connections)";
    else if (options_.max_connections_per_peer != 0 && of_peer >= options_.max_connections_per_peer)
      why = child.peer + " has " + std::to_string(of_peer) +
            " connections (guest.connections_per_peer)";
    if (!why.empty()) {
      // Closed unread: the guest sees its connection end before HELLO.
      log(name + " (" + child.peer + "): refused: " + why);
      return;
    }
  }
  if (!options_.sandbox.cgroup.empty()) {
    Status st = GuestCgroup::create(options_.sandbox, serial, &child.cgroup);
    if (!st.is_ok()) {
      // Closing the connection tells the guest; an unconfined worker would be worse.
      log(name + ": refused: " + st.message);
      return;
    }
  }
  SpawnOptions spawn_options;
  spawn_options.mask = &signals_.original_mask();
  spawn_options.env = environment_with({});
  spawn_options.die_with_parent = true;
  spawn_options.move_fd = connection.get();
  spawn_options.move_fd_to = kServeFd;
  spawn_options.cgroup_procs_fd = child.cgroup ? child.cgroup->procs_fd() : -1;
  spawn_options.uid = options_.sandbox.uid;
  spawn_options.gid = options_.sandbox.gid;
  spawn_options.no_new_privs = true;
  pid_t pid = -1;
  int exec_errno = 0;
  // Under the lock: the reaper must not see the child exit before it is known.
  std::lock_guard lock(mutex_);
  Status st =
      spawn(options_.worker_argv[0], options_.worker_argv, spawn_options, &pid, &exec_errno);
  if (!st.is_ok()) {
    log(name + ": cannot start its worker: " + st.message);
    return;
  }
  children_.emplace(pid, std::move(child));
}

size_t Supervisor::reap() {
  std::lock_guard lock(mutex_);
  int wait_status = 0;
  pid_t pid;
  while ((pid = ::waitpid(-1, &wait_status, WNOHANG)) > 0) {
    auto it = children_.find(pid);
    if (it == children_.end())
      continue;
    // A worker ends with its guest; anything else is worth a line.
    const bool orderly = WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0;
    if (!orderly)
      log("the worker of guest connection " + std::to_string(it->second.serial) + " (pid " +
          std::to_string(pid) + ") " + describe_exit(wait_status));
    children_.erase(it);
    ++workers_ended_;
    resources_cv_.notify_all();
  }
  return children_.size();
}

void Supervisor::stop_all() {
  std::map<pid_t, Child> children;
  {
    std::lock_guard lock(mutex_);
    children.swap(children_);
  }
  for (const auto &[pid, child] : children)
    ::kill(pid, SIGTERM);
  for (const auto &[pid, child] : children) {
    bool forced = false;
    // Already SIGTERMed: this waits for it, and forces it after the grace.
    stop_process(pid, options_.stop_grace_ms, &forced);
    if (forced)
      log("the worker of guest connection " + std::to_string(child.serial) +
          " did not stop and was killed");
  }
}

int Supervisor::run() {
  std::thread acceptor;
  try {
    acceptor = std::thread([this] { accept_loop(); });
  } catch (const std::system_error &e) {
    log(std::string("cannot start the accepting thread: ") + e.what());
    return 1;
  }
  for (;;) {
    signalfd_siginfo info{};
    if (signals_.wait(-1, -1, &info) != 1)
      continue;
    if (info.ssi_signo != SIGCHLD)
      break;
    const size_t left = reap();
    if (options_.exit_when_idle && left == 0) {
      std::lock_guard lock(mutex_);
      if (served_ > 0 && children_.empty())
        break;
    }
  }
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  resources_cv_.notify_all();
  listener_.shutdown();
  acceptor.join();
  stop_all();
  return 0;
}

} // namespace

int run_supervisor(const SupervisorOptions &options) {
  if (options.worker_argv.empty()) {
    log("no worker command");
    return 1;
  }
  // A guest vanishing mid-write of the ready line must not kill us.
  struct sigaction ignore = {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, nullptr);
  SignalWatch signals;
  Status st = signals.open();
  if (!st.is_ok()) {
    log(st.message);
    return 1;
  }
  std::unique_ptr<Listener> listener;
  st = listen_channel(options.listen, &listener);
  if (!st.is_ok()) {
    log("cannot listen on " + options.listen.to_string() + ": " + st.message);
    return 1;
  }
  if (options.ready_fd >= 0) {
    if (!write_text(options.ready_fd, listener->address().to_string() + "\n"))
      log(errno_text("cannot report the address on fd " + std::to_string(options.ready_fd), errno));
    ::close(options.ready_fd);
  }
  // Each worker is told the address its connection came in on (the bound
  // one: a tcp port 0 is known only now).
  SupervisorOptions bound = options;
  bound.worker_argv.push_back("--listen");
  bound.worker_argv.push_back(listener->address().to_string());
  Supervisor supervisor(bound, *listener, signals);
  return supervisor.run();
}

} // namespace ava::tool
