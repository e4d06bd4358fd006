// SPDX-License-Identifier: MIT
// `ava vmhost`: the host side of one VM's ava device (include/ava/ivshmem.h).
// It owns the VM's shared memory, is the ivshmem server QEMU's
// ivshmem-doorbell device connects to, watches the slot table, and forks one
// worker per slot a guest process claims. Single-threaded by design: workers
// are forked without exec, which is only safe from a process with one
// thread, and plugins (whose libraries start threads) load in the child.
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "tools/ava/commands.hpp"
#include "tools/ava/guest_cgroup.hpp"
#include "tools/ava/guest_policy.hpp"
#include "tools/ava/host_config.hpp"
#include "tools/ava/paths.hpp"
#include "tools/ava/process.hpp"
#include "transport/ivshmem_host.hpp"
#include "transport/unix_socket.hpp"
#include "worker/server.hpp"

namespace ava::tool {
namespace {

using detail::UniqueFd;

// The host's ivshmem peer id; QEMU instances get ids from 1.
constexpr uint32_t kHostPeer = 0;
// Slot table scans also run on this period, so that a lost doorbell delays
// a claim by at most this long instead of forever.
constexpr int kScanPeriodMs = 100;
// Workers get this long to finish after their VM went away or at shutdown,
// then SIGKILL.
constexpr int kWorkerGraceMs = 3000;
// A worker whose guest process released its slot gets this long.
constexpr int kReleaseGraceMs = 1000;

struct VmhostOptions {
  std::string socket_path;
  std::string shm_path;
  IvshmemGeometry geometry;
  WorkerOptions worker;
  int ready_fd = -1;
  bool exit_with_vm = false;
  std::string host_config; // --host-config FILE (default /etc/ava/host.toml)
  GuestSandbox sandbox;    // from the host configuration
  GuestLimits limits;      // from the host configuration
};

void log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::fputs("ava vmhost: ", stderr);
  std::vfprintf(stderr, fmt, ap);
  std::fputc('\n', stderr);
  va_end(ap);
}

bool parse_u64(const std::string &text, uint64_t *out) {
  if (text.empty() || text.size() > 19)
    return false;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

Status parse_vmhost_args(std::span<const std::string> args, VmhostOptions *o) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    auto value = [&](std::string *out) {
      if (i + 1 >= args.size())
        return false;
      *out = args[++i];
      return true;
    };
    std::string v;
    uint64_t num = 0;
    // Options that only store their value share an empty branch.
    // NOLINTNEXTLINE(bugprone-branch-clone)
    if (a == "--socket" && value(&o->socket_path)) {
    } else if (a == "--shm-path" && value(&o->shm_path)) {
    } else if (a == "--plugin-dir" && value(&o->worker.plugin_dir)) {
    } else if (a == "--spec" && value(&v)) {
      o->worker.specs.push_back(v);
    } else if (a == "--slots" && value(&v) && parse_u64(v, &num) && num <= AVA_DEV_MAX_SLOTS) {
      o->geometry.nslots = static_cast<uint32_t>(num);
    } else if (a == "--ring-kib" && value(&v) && parse_u64(v, &num) && num <= (1u << 20)) {
      o->geometry.cmd_size = o->geometry.reply_size = num << 10;
    } else if (a == "--heap-mib" && value(&v) && parse_u64(v, &num) && num <= (1u << 14)) {
      o->geometry.heap_size = num << 20;
    } else if (a == "--ready-fd" && value(&v) && parse_u64(v, &num) && num < 1u << 20) {
      o->ready_fd = static_cast<int>(num);
    } else if (a == "--report" && value(&o->worker.report_file)) {
    } else if (a == "--host-config" && value(&o->host_config)) {
    } else if (a == "--exit-with-vm") {
      o->exit_with_vm = true;
    } else {
      return Status::error(AVA_E_PROTO, "bad or incomplete option '" + a + "'");
    }
  }
  if (o->socket_path.empty())
    return Status::error(AVA_E_PROTO, "--socket PATH is required");
  return check_ivshmem_geometry(o->geometry);
}

class Vmhost {
public:
  explicit Vmhost(VmhostOptions options) : o_(std::move(options)) {}
  int run();

private:
  struct Slot {
    pid_t worker = -1;
    uint32_t gen = 0; // the claim the worker serves (or last served)
    int64_t kill_at_ms = -1;
    std::unique_ptr<GuestCgroup> cgroup; // the worker's, from the host configuration
    // The worker said goodbye and went while the guest still held the slot:
    // its region header page stays until the release, then goes too.
    bool awaiting_release = false;
  };

  Status setup();
  Status accept_vm();
  void vm_gone();
  void scan();
  void start_worker(uint32_t i, uint32_t gen);
  // Shows slot i IDLE (its worker and everything it held gone) and tells the guest.
  void publish_idle(uint32_t i);
  [[noreturn]] void worker_child(uint32_t i, uint32_t gen, int wait_efd, int irq_efd);
  void reap();
  void finish_slot(uint32_t i, int wait_status);
  void mark_region(uint32_t i, uint32_t bits);
  void interrupt(uint32_t vector);
  void enforce_grace();
  void shutdown_all();
  int64_t now_ms() const;

  VmhostOptions o_;
  std::unique_ptr<IvshmemMemory> mem_;
  std::vector<UniqueFd> host_efds_; // per vector: the host's doorbells (guest -> host)
  std::vector<UniqueFd> irq_efds_;  // per vector: the VM's interrupts (host -> guest)
  std::vector<Slot> slots_;
  detail::UnixListenSocket listen_;
  UniqueFd vm_sock_;
  uint32_t next_peer_ = 1;
  UniqueFd epoll_, signal_fd_, timer_;
  bool had_vm_ = false;
};

int64_t Vmhost::now_ms() const {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}

Status Vmhost::setup() {
  Status st = IvshmemMemory::create(o_.geometry, kHostPeer, o_.shm_path, &mem_);
  if (!st.is_ok())
    return st;
  const uint32_t vectors = mem_->header().vectors;
  for (uint32_t v = 0; v < vectors; ++v) {
    const int fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fd < 0)
      return Status::error(AVA_E_NOMEM, std::string("eventfd: ") + std::strerror(errno));
    host_efds_.emplace_back(fd);
  }
  slots_.resize(o_.geometry.nslots);
  Address addr;
  addr.kind = ChannelKind::Unix;
  addr.path = o_.socket_path;
  st = detail::listen_unix_socket(addr, "unix", SOCK_STREAM, &listen_);
  if (!st.is_ok())
    return st;
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGCHLD);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  signal_fd_ = UniqueFd(::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK));
  timer_ = UniqueFd(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
  epoll_ = UniqueFd(::epoll_create1(EPOLL_CLOEXEC));
  if (signal_fd_.get() < 0 || timer_.get() < 0 || epoll_.get() < 0)
    return Status::error(AVA_E_NOMEM, std::string("vmhost setup: ") + std::strerror(errno));
  itimerspec period{};
  period.it_interval.tv_nsec = kScanPeriodMs * 1000000L;
  period.it_value = period.it_interval;
  timerfd_settime(timer_.get(), 0, &period, nullptr);
  for (int fd : {listen_.fd.get(), signal_fd_.get(), timer_.get(), host_efds_[0].get()}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) != 0)
      return Status::error(AVA_E_NOMEM, std::string("epoll_ctl: ") + std::strerror(errno));
  }
  return Status::ok();
}

Status Vmhost::accept_vm() {
  UniqueFd sock(::accept4(listen_.fd.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (sock.get() < 0)
    return Status::ok();
  if (vm_sock_.get() >= 0) {
    // One VM per shared memory: a second one would claim the same slots.
    log("refusing a second VM: this vmhost serves one");
    return Status::ok();
  }
  bool workers_left = false;
  for (const Slot &s : slots_)
    workers_left |= s.worker > 0;
  if (workers_left) {
    log("refusing a VM while the previous VM's workers are still ending");
    return Status::ok();
  }
  const uint32_t peer = next_peer_++;
  const uint32_t vectors = mem_->header().vectors;
  std::vector<UniqueFd> irqs;
  for (uint32_t v = 0; v < vectors; ++v) {
    const int fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fd < 0)
      return Status::error(AVA_E_NOMEM, std::string("eventfd: ") + std::strerror(errno));
    irqs.emplace_back(fd);
  }
  // A fresh table before the VM can see the memory: once it has the
  // greeting, it may claim slots.
  mem_->reset_table();
  for (Slot &s : slots_)
    s.gen = 0;
  // The server protocol's greeting, in the order ivshmem-spec.txt gives.
  Status st = ivshmem_send(sock.get(), 0, -1);
  if (st.is_ok())
    st = ivshmem_send(sock.get(), peer, -1);
  if (st.is_ok())
    st = ivshmem_send(sock.get(), -1, mem_->fd());
  for (uint32_t v = 0; v < vectors && st.is_ok(); ++v)
    st = ivshmem_send(sock.get(), kHostPeer, host_efds_[v].get());
  for (uint32_t v = 0; v < vectors && st.is_ok(); ++v)
    st = ivshmem_send(sock.get(), peer, irqs[v].get());
  if (!st.is_ok()) {
    log("VM peer %u: %s", peer, st.message.c_str());
    return Status::ok();
  }
  irq_efds_ = std::move(irqs);
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.fd = sock.get();
  epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, sock.get(), &ev);
  vm_sock_ = std::move(sock);
  had_vm_ = true;
  log("VM connected as ivshmem peer %u (%u slots, %u vectors)", peer, o_.geometry.nslots, vectors);
  return Status::ok();
}

void Vmhost::mark_region(uint32_t i, uint32_t bits) {
  auto *hdr = reinterpret_cast<ava_region_hdr *>(mem_->slot_base(i));
  // Pairs with the acquire loads of state in both sides' channels.
  __atomic_fetch_or(&hdr->state, bits, __ATOMIC_SEQ_CST);
}

void Vmhost::interrupt(uint32_t vector) {
  if (vector >= irq_efds_.size())
    return;
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t rc = ::write(irq_efds_[vector].get(), &one, sizeof one);
}

void Vmhost::vm_gone() {
  epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, vm_sock_.get(), nullptr);
  vm_sock_.reset();
  irq_efds_.clear();
  log("VM disconnected");
  for (uint32_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].awaiting_release) {
      // Nobody is left to release it: the header page goes now.
      slots_[i].awaiting_release = false;
      (void)mem_->scrub(mem_->slot_offset(i), AVA_REGION_ALIGN);
      __atomic_store_n(&mem_->slot_entry(i)->host_state, AVA_SLOT_IDLE, __ATOMIC_RELEASE);
    }
    if (slots_[i].worker <= 0)
      continue;
    // Nobody is left to release the slot: close it for the worker, wake it.
    mark_region(i, AVA_REGION_CLOSED);
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t rc = ::write(host_efds_[AVA_DEV_SLOT_VECTOR(i)].get(), &one, 8);
    slots_[i].kill_at_ms = now_ms() + kWorkerGraceMs;
  }
}

void Vmhost::scan() {
  if (vm_sock_.get() < 0)
    return;
  for (uint32_t i = 0; i < slots_.size(); ++i) {
    Slot &s = slots_[i];
    const ava_slot_entry *e = mem_->slot_entry(i);
    // Pairs with ava.ko's release store of guest_state after the region
    // header and guest_gen: seeing CLAIMED, we see both.
    const uint32_t state = __atomic_load_n(&e->guest_state, __ATOMIC_ACQUIRE);
    const uint32_t gen = __atomic_load_n(&e->guest_gen, __ATOMIC_RELAXED);
    const bool held = state == AVA_SLOT_CLAIMED && gen == s.gen;
    if (s.awaiting_release && !held) {
      s.awaiting_release = false;
      Status scrubbed = mem_->scrub(mem_->slot_offset(i), AVA_REGION_ALIGN);
      if (!scrubbed.is_ok())
        log("slot %u: %s", i, scrubbed.message.c_str());
      publish_idle(i);
      continue;
    }
    if (s.worker > 0) {
      // The guest let go (it exited or was killed, perhaps mid-call). A
      // worker still inside a long API call would hold the slot and the
      // guest's objects until that call returns: it gets a short grace
      // to wind down, then goes, and its objects go with its process.
      if (!held && s.kill_at_ms < 0)
        s.kill_at_ms = now_ms() + kReleaseGraceMs;
      continue;
    }
    if (state == AVA_SLOT_CLAIMED && gen != s.gen)
      start_worker(i, gen);
  }
}

void Vmhost::start_worker(uint32_t i, uint32_t gen) {
  ava_slot_entry *e = mem_->slot_entry(i);
  slots_[i].gen = gen;
  slots_[i].kill_at_ms = -1;
  // A policed claim's command tail starts at zero for ava.ko, which reads it
  // only once host_gen names the claim (ivshmem.h); the worker only raises it.
  __atomic_store_n(&e->cmd_tail, uint64_t{0}, __ATOMIC_RELAXED);
  if (!o_.sandbox.cgroup.empty()) {
    Status made = GuestCgroup::create(o_.sandbox, gen * 64 + i, &slots_[i].cgroup);
    if (!made.is_ok()) {
      // An unconfined worker would be worse than none.
      log("slot %u: %s; slot marked broken", i, made.message.c_str());
      mark_region(i, AVA_REGION_BROKEN);
      __atomic_store_n(&e->host_gen, gen, __ATOMIC_RELAXED);
      __atomic_store_n(&e->host_state, AVA_SLOT_IDLE, __ATOMIC_RELEASE);
      interrupt(AVA_DEV_SLOT_VECTOR(i));
      return;
    }
  }
  // Before the fork: the new worker counts this claim's first messages at
  // once, and a reset after it could wipe them out.
  e->commands = e->bytes_in = e->bytes_out = e->errors = 0;
  const pid_t pid = ::fork();
  if (pid == 0)
    worker_child(i, gen, host_efds_[AVA_DEV_SLOT_VECTOR(i)].get(),
                 irq_efds_[AVA_DEV_SLOT_VECTOR(i)].get());
  if (pid < 0) {
    log("slot %u: cannot fork a worker: %s; slot marked broken", i, std::strerror(errno));
    mark_region(i, AVA_REGION_BROKEN);
    __atomic_store_n(&e->host_gen, gen, __ATOMIC_RELAXED);
    __atomic_store_n(&e->host_state, AVA_SLOT_IDLE, __ATOMIC_RELEASE);
    interrupt(AVA_DEV_SLOT_VECTOR(i));
    return;
  }
  slots_[i].worker = pid;
  __atomic_store_n(&e->worker_pid, static_cast<uint32_t>(pid), __ATOMIC_RELAXED);
  __atomic_store_n(&e->host_gen, gen, __ATOMIC_RELAXED);
  // Pairs with ava.ko's acquire load of host_state (netlink reports,
  // claimability): SERVING comes with the fields above.
  __atomic_store_n(&e->host_state, AVA_SLOT_SERVING, __ATOMIC_RELEASE);
  log("slot %u: claim %u by guest pid %u, worker %d", i, gen,
      __atomic_load_n(&e->guest_pid, __ATOMIC_RELAXED), static_cast<int>(pid));
}

void Vmhost::worker_child(uint32_t i, uint32_t gen, int wait_efd, int irq_efd) {
  sigset_t mask;
  sigemptyset(&mask);
  sigprocmask(SIG_SETMASK, &mask, nullptr);
  // Keep only what the slot needs: the memory, its two eventfds, stdio. The
  // parent's epoll, listener, VM socket and other slots' eventfds go.
  int keep[3] = {::fcntl(mem_->fd(), F_DUPFD_CLOEXEC, 3), ::fcntl(wait_efd, F_DUPFD_CLOEXEC, 3),
                 ::fcntl(irq_efd, F_DUPFD_CLOEXEC, 3)};
  int sorted[3] = {keep[0], keep[1], keep[2]};
  std::sort(std::begin(sorted), std::end(sorted));
  unsigned from = 3;
  for (int fd : sorted) {
    if (fd < 0)
      continue;
    if (static_cast<unsigned>(fd) > from)
      ::close_range(from, static_cast<unsigned>(fd) - 1, 0);
    from = static_cast<unsigned>(fd) + 1;
  }
  ::close_range(from, ~0u, 0);
  Status st = Status::error(AVA_E_NOMEM, "cannot duplicate the slot's descriptors");
  std::unique_ptr<Channel> channel;
  if (keep[0] >= 0 && keep[1] >= 0 && keep[2] >= 0) {
    mem_->adopt_fd_after_fork(keep[0]);
    // The worker keeps its own slot and its line of the slot table mapped,
    // nothing else of the VM's memory, and no way to map more.
    st = mem_->keep_only_slot(i);
    if (st.is_ok())
      st = ivshmem_slot_channel(*mem_, i, gen, UniqueFd(keep[1]), UniqueFd(keep[2]), &channel);
    mem_->drop_fd();
  }
  if (st.is_ok()) {
    const int cgroup_fd = slots_[i].cgroup ? slots_[i].cgroup->procs_fd() : -1;
    const int err = confine_child(cgroup_fd, o_.sandbox.uid, o_.sandbox.gid, true);
    if (err != 0)
      st = Status::error(AVA_E_STATE,
                         std::string("cannot confine the worker: ") + std::strerror(err));
  }
  if (!st.is_ok()) {
    log("slot %u: %s", i, st.message.c_str());
    _exit(3);
  }
  PluginSet plugins(o_.worker.plugin_dir, o_.worker.specs);
  GuestPolicy policy(o_.limits, mem_->slot_entry(i));
  WorkerOptions options = o_.worker;
  options.admit_call = [&policy](const ava_msg_hdr &, uint64_t bytes, std::string *why) {
    return policy.admit(bytes, why);
  };
  // Refused calls show in `avactl stats` as the slot's errors.
  ava_slot_entry *entry = mem_->slot_entry(i);
  options.on_refused = [entry](int) { __atomic_fetch_add(&entry->errors, 1, __ATOMIC_RELAXED); };
  // `avactl policy SLOT mem-quota N`: the spec's "device_memory" allocations.
  options.resource_quota = [&policy](std::string_view resource) { return policy.quota(resource); };
  st = serve_guest(std::move(channel), plugins, options);
  _exit(st.is_ok() ? 0 : 1);
}

void Vmhost::finish_slot(uint32_t i, int wait_status) {
  Slot &s = slots_[i];
  s.worker = -1;
  s.kill_at_ms = -1;
  s.cgroup.reset();
  ava_slot_entry *e = mem_->slot_entry(i);
  const uint32_t state = __atomic_load_n(&e->guest_state, __ATOMIC_ACQUIRE);
  const uint32_t gen = __atomic_load_n(&e->guest_gen, __ATOMIC_RELAXED);
  const bool orderly = WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0;
  if (state == AVA_SLOT_CLAIMED && gen == s.gen && vm_sock_.get() >= 0) {
    // The guest still holds the slot: its calls must fail, not wait. After
    // an orderly goodbye (exit 0) that is the usual moment between the
    // guest library's goodbye and the process closing /dev/ava: no news.
    mark_region(i, AVA_REGION_BROKEN);
    if (WIFSIGNALED(wait_status))
      log("slot %u: worker killed by signal %d while the guest holds the slot: marked broken", i,
          WTERMSIG(wait_status));
    else if (!orderly)
      log("slot %u: worker exited (%d) while the guest holds the slot: marked broken", i,
          WEXITSTATUS(wait_status));
  }
  // Nothing of this claim's commands, replies and buffers is left for the
  // next claimant (another process, perhaps of another VM). The region
  // header page stays while the guest still holds the slot: it says BROKEN.
  const ava_dev_hdr &h = mem_->header();
  const bool still_held = state == AVA_SLOT_CLAIMED && gen == s.gen;
  const uint64_t keep = still_held ? AVA_REGION_ALIGN : 0;
  Status scrubbed = mem_->scrub(mem_->slot_offset(i) + keep, h.slot_size - keep);
  if (!scrubbed.is_ok())
    log("slot %u: %s", i, scrubbed.message.c_str());
  __atomic_store_n(&e->worker_pid, 0u, __ATOMIC_RELAXED);
  if (still_held && orderly && vm_sock_.get() >= 0) {
    // The usual end (goodbye, then the process closes /dev/ava): IDLE, and
    // so a new claim, waits for the release and the scrub of the header page.
    s.awaiting_release = true;
    interrupt(AVA_DEV_SLOT_VECTOR(i));
    return;
  }
  publish_idle(i);
}

void Vmhost::publish_idle(uint32_t i) {
  ava_slot_entry *e = mem_->slot_entry(i);
  // Pairs with ava.ko's acquire load of host_state in its claimability
  // check: IDLE means this slot's worker is gone with everything it held.
  __atomic_store_n(&e->host_state, AVA_SLOT_IDLE, __ATOMIC_RELEASE);
  interrupt(AVA_DEV_SLOT_VECTOR(i));
  interrupt(AVA_DEV_CTL_VECTOR);
}

void Vmhost::reap() {
  for (;;) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0)
      return;
    for (uint32_t i = 0; i < slots_.size(); ++i)
      if (slots_[i].worker == pid)
        finish_slot(i, status);
  }
}

void Vmhost::enforce_grace() {
  const int64_t now = now_ms();
  for (Slot &s : slots_)
    if (s.worker > 0 && s.kill_at_ms >= 0 && now >= s.kill_at_ms) {
      ::kill(s.worker, SIGKILL);
      s.kill_at_ms = -1;
    }
}

void Vmhost::shutdown_all() {
  mem_->set_host_state(AVA_HOST_DOWN);
  for (uint32_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].worker <= 0)
      continue;
    mark_region(i, AVA_REGION_BROKEN);
    interrupt(AVA_DEV_SLOT_VECTOR(i));
    ::kill(slots_[i].worker, SIGTERM);
  }
  const int64_t deadline = now_ms() + kWorkerGraceMs;
  bool killed = false;
  for (;;) {
    reap();
    bool left = false;
    for (const Slot &s : slots_)
      left |= s.worker > 0;
    if (!left)
      return;
    const int64_t now = now_ms();
    if (!killed && now >= deadline) {
      for (const Slot &s : slots_)
        if (s.worker > 0)
          ::kill(s.worker, SIGKILL);
      killed = true;
    }
    // SIGCHLD comes through signal_fd_ (blocked since setup): sleep until a
    // worker exits or the grace ends, not in naps.
    pollfd p{signal_fd_.get(), POLLIN, 0};
    if (::poll(&p, 1, killed ? 1000 : static_cast<int>(deadline - now)) > 0) {
      signalfd_siginfo si{};
      while (::read(signal_fd_.get(), &si, sizeof si) == sizeof si) {
      }
    }
  }
}

int Vmhost::run() {
  Status st = setup();
  if (!st.is_ok()) {
    log("%s", st.message.c_str());
    return kExitFailure;
  }
  if (o_.ready_fd >= 0) {
    const std::string line = "ready " + std::to_string(o_.geometry.nslots) + " " +
                             std::to_string(mem_->header().vectors) + "\n";
    [[maybe_unused]] ssize_t rc = ::write(o_.ready_fd, line.data(), line.size());
    ::close(o_.ready_fd);
  }
  bool running = true;
  while (running) {
    epoll_event events[8];
    const int n = epoll_wait(epoll_.get(), events, 8, -1);
    if (n < 0 && errno != EINTR) {
      log("epoll_wait: %s", std::strerror(errno));
      break;
    }
    for (int k = 0; k < n; ++k) {
      const int fd = events[k].data.fd;
      if (fd == listen_.fd.get()) {
        accept_vm();
      } else if (fd == signal_fd_.get()) {
        signalfd_siginfo si{};
        while (::read(signal_fd_.get(), &si, sizeof si) == sizeof si)
          if (si.ssi_signo == SIGINT || si.ssi_signo == SIGTERM)
            running = false;
        reap();
      } else if (fd == timer_.get() || fd == host_efds_[0].get()) {
        uint64_t count = 0;
        [[maybe_unused]] ssize_t rc = ::read(fd, &count, sizeof count);
        reap();
        enforce_grace();
        scan();
      } else if (fd == vm_sock_.get()) {
        char byte = 0;
        // The server protocol is one-way: anything from QEMU but EOF is noise.
        const ssize_t rc = ::recv(fd, &byte, 1, MSG_DONTWAIT);
        if (rc == 0 || (rc < 0 && errno != EAGAIN && errno != EINTR)) {
          vm_gone();
          if (o_.exit_with_vm)
            running = false;
        }
      }
    }
  }
  shutdown_all();
  if (listen_.owns_file)
    detail::remove_own_socket_file(o_.socket_path, listen_.dev, listen_.ino);
  log("stopped");
  return 0;
}

} // namespace

int vmhost_command(std::span<const std::string> args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    print_help();
    return 0;
  }
  VmhostOptions options;
  Status st = parse_vmhost_args(args, &options);
  if (!st.is_ok()) {
    std::fprintf(stderr, "ava: vmhost: %s\nTry 'ava --help' for more information.\n",
                 st.message.c_str());
    return kExitUsage;
  }
  if (options.worker.plugin_dir.empty())
    options.worker.plugin_dir = plugin_dir();
  if (options.worker.plugin_dir.empty()) {
    std::fprintf(stderr, "ava: vmhost: cannot locate the plugin directory: use --plugin-dir\n");
    return kExitUsage;
  }
  HostConfig host_config;
  st = load_host_config(options.host_config, &host_config);
  if (!st.is_ok()) {
    std::fprintf(stderr, "ava: vmhost: %s\n", st.message.c_str());
    return kExitUsage;
  }
  // Every slot has a worker process of its own: isolation = "shared" does not apply.
  options.sandbox = host_config.sandbox;
  options.limits = host_config.limits;
  options.worker.max_guest_threads = host_config.limits.threads;
  options.worker.max_guest_objects = host_config.limits.objects;
  options.worker.max_guest_callbacks = host_config.limits.callbacks;
  options.worker.max_guest_kept_bytes = host_config.limits.kept_bytes;
  options.worker.send_timeout_ms = host_config.limits.send_timeout_ms;
  options.worker.plugin_settings = host_config.plugin_settings;
  options.worker.credentials = host_config.credentials;
  Vmhost host(std::move(options));
  return host.run();
}

} // namespace ava::tool
