// SPDX-License-Identifier: MIT
// `ava vmhost` without a VM: this test plays QEMU's ivshmem-doorbell device
// (the ivshmem server protocol's client) and ava.ko (claiming slots in the
// shared memory exactly as include/ava/ivshmem.h says), then talks to the
// forked worker through the slot's rings with the same ShmChannel a guest
// uses. The VM tests (tests/vm) run the real module in QEMU; this one pins
// down the host's half of the contract, and its faults, in seconds.
#include <criterion/criterion.h>

#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ava/ivshmem.h"
#include "demo_wire.h"
#include "proc.hpp"
#include "tests/common/wire_message.hpp"
#include "transport/shm_channel.hpp"

namespace {

using ava::detail::RegionSignals;

constexpr uint32_t kSlots = 2;
constexpr int kBoundMs = 10000;

bool eventually(const std::function<bool()> &cond, int ms = kBoundMs) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < end) {
    if (cond())
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return cond();
}

void signal_fd(int fd) {
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t rc = write(fd, &one, sizeof one);
}

bool readable(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, ms) > 0;
}

// One message of the server protocol: an int64 and maybe one descriptor.
bool recv_msg(int sock, int64_t *value, int *fd) {
  iovec iov{value, sizeof *value};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  if (!readable(sock, kBoundMs) || recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != sizeof *value)
    return false;
  *fd = -1;
  for (cmsghdr *c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
      std::memcpy(fd, CMSG_DATA(c), sizeof(int));
  return true;
}

int connect_unix(const std::string &path) {
  const int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::strncpy(sa.sun_path, path.c_str(), sizeof sa.sun_path - 1);
  if (connect(s, reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0) {
    close(s);
    return -1;
  }
  return s;
}

// The test's stand-in for QEMU and ava.ko.
struct FakeVm {
  int sock = -1;
  int64_t peer = -1;
  int mem_fd = -1;
  uint8_t *mem = nullptr;
  uint64_t size = 0;
  ava_dev_hdr hdr{};
  std::vector<int> host_efds; // ring the host
  std::vector<int> irq_efds;  // the host interrupts us

  ~FakeVm() {
    if (mem != nullptr)
      munmap(mem, size);
    for (int fd : host_efds)
      close(fd);
    for (int fd : irq_efds)
      close(fd);
    if (mem_fd >= 0)
      close(mem_fd);
    if (sock >= 0)
      close(sock);
  }

  // The greeting of ivshmem-spec.txt, checked message by message.
  void connect_to(const std::string &path) {
    sock = connect_unix(path);
    cr_assert(sock >= 0, "cannot connect to the vmhost socket");
    int64_t v = -2;
    int fd = -1;
    cr_assert(recv_msg(sock, &v, &fd) && v == 0 && fd < 0, "protocol version 0 first");
    cr_assert(recv_msg(sock, &peer, &fd) && peer > 0 && peer < 65536 && fd < 0, "our peer id");
    cr_assert(recv_msg(sock, &v, &mem_fd) && v == -1 && mem_fd >= 0, "-1 with the memory");
    struct stat st {};
    cr_assert(fstat(mem_fd, &st) == 0 && st.st_size > 0);
    size = static_cast<uint64_t>(st.st_size);
    cr_assert((size & (size - 1)) == 0, "a BAR wants a power of two, got %lu",
              static_cast<unsigned long>(size));
    void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, mem_fd, 0);
    cr_assert(p != MAP_FAILED);
    mem = static_cast<uint8_t *>(p);
    std::memcpy(&hdr, mem, sizeof hdr);
    cr_assert(hdr.magic == AVA_DEV_MAGIC && hdr.version == AVA_DEV_VERSION);
    cr_assert(hdr.nslots == kSlots && hdr.vectors == kSlots + 1 && hdr.host_state == AVA_HOST_UP);
    cr_assert(hdr.total_size == size && hdr.slots_off + kSlots * hdr.slot_size <= size);
    cr_assert(hdr.slot_size >= 4096 + hdr.cmd_size + hdr.reply_size + hdr.heap_size);
    for (uint32_t i = 0; i < hdr.vectors; ++i) {
      cr_assert(recv_msg(sock, &v, &fd) && v == hdr.host_peer && fd >= 0,
                "the host's doorbell for vector %u", i);
      host_efds.push_back(fd);
    }
    for (uint32_t i = 0; i < hdr.vectors; ++i) {
      cr_assert(recv_msg(sock, &v, &fd) && v == peer && fd >= 0, "our interrupt vector %u", i);
      irq_efds.push_back(fd);
    }
  }

  ava_slot_entry *entry(uint32_t i) const {
    return reinterpret_cast<ava_slot_entry *>(mem + AVA_DEV_ENTRY_OFF(i));
  }
  uint8_t *slot(uint32_t i) const { return mem + hdr.slots_off + i * hdr.slot_size; }
  ava_region_hdr *region(uint32_t i) const { return reinterpret_cast<ava_region_hdr *>(slot(i)); }

  // What ava.ko's open() does; edit may spoil the header before it is published.
  uint32_t claim(uint32_t i, const std::function<void(ava_region_hdr *)> &edit = {},
                 uint32_t claim_flags = 0) {
    std::memset(slot(i), 0, 4096);
    ava_region_hdr *r = region(i);
    r->magic = AVA_REGION_MAGIC;
    r->version = AVA_REGION_VERSION;
    r->features = AVA_REGION_F_DOORBELL;
    r->total_size = hdr.slot_size;
    r->cmd_off = 4096;
    r->cmd_size = hdr.cmd_size;
    r->reply_off = 4096 + hdr.cmd_size;
    r->reply_size = hdr.reply_size;
    r->heap_off = 4096 + hdr.cmd_size + hdr.reply_size;
    r->heap_size = hdr.heap_size;
    r->guest_pid = 4242;
    if (edit)
      edit(r);
    __atomic_store_n(&r->state, AVA_REGION_READY, __ATOMIC_RELEASE);
    ava_slot_entry *e = entry(i);
    const uint32_t gen = e->guest_gen + 1;
    e->guest_pid = 4242;
    e->claim_flags = claim_flags;
    e->checked_head = 0;
    __atomic_store_n(&e->guest_gen, gen, __ATOMIC_RELEASE);
    __atomic_store_n(&e->guest_state, AVA_SLOT_CLAIMED, __ATOMIC_RELEASE);
    signal_fd(host_efds[AVA_DEV_CTL_VECTOR]);
    return gen;
  }

  // What ava.ko's release() does.
  void release(uint32_t i) {
    __atomic_fetch_or(&region(i)->state, AVA_REGION_CLOSED, __ATOMIC_SEQ_CST);
    __atomic_store_n(&entry(i)->guest_state, AVA_SLOT_RELEASED, __ATOMIC_RELEASE);
    signal_fd(host_efds[AVA_DEV_SLOT_VECTOR(i)]);
    signal_fd(host_efds[AVA_DEV_CTL_VECTOR]);
  }

  uint32_t host_state(uint32_t i) const {
    return __atomic_load_n(&entry(i)->host_state, __ATOMIC_ACQUIRE);
  }
  uint32_t region_state(uint32_t i) const {
    return __atomic_load_n(&region(i)->state, __ATOMIC_ACQUIRE);
  }
};

// The guest side's waits, as ava.ko's AVA_IOC_WAIT/KICK would do them.
class FakeKmodSignals final : public RegionSignals {
public:
  FakeKmodSignals(int irq_efd, int host_efd) : irq_(irq_efd), host_(host_efd) {}
  bool sleep(uint32_t *, int ms) override {
    if (!readable(irq_, ms))
      return false;
    uint64_t n = 0;
    [[maybe_unused]] ssize_t rc = read(irq_, &n, sizeof n);
    return true;
  }
  void wake_peer(uint32_t *) override { signal_fd(host_); }
  void wake_self(uint32_t *) override {}
  bool peer_gone() override { return false; }

private:
  int irq_;
  int host_;
};

// policed: the channel plays ava.ko producing a policed claim's command
// ring, whose indices live in the slot table.
std::unique_ptr<ava::Channel> guest_channel(FakeVm &vm, uint32_t i, bool policed = false) {
  const uint64_t size = vm.hdr.slot_size;
  void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, vm.mem_fd,
                 static_cast<off_t>(vm.hdr.slots_off + i * size));
  cr_assert(p != MAP_FAILED);
  ava::detail::ShmMapping map(static_cast<uint8_t *>(p), size);
  ava::detail::RegionLayout l;
  const ava_region_hdr *r = vm.region(i);
  l.total_size = size;
  l.cmd_off = r->cmd_off;
  l.cmd_size = r->cmd_size;
  l.reply_off = r->reply_off;
  l.reply_size = r->reply_size;
  l.heap_off = r->heap_off;
  l.heap_size = r->heap_size;
  auto signals = std::make_unique<FakeKmodSignals>(vm.irq_efds[AVA_DEV_SLOT_VECTOR(i)],
                                                   vm.host_efds[AVA_DEV_SLOT_VECTOR(i)]);
  ava::detail::PolicedRing ring;
  if (policed) {
    ring.cmd_head = &vm.entry(i)->checked_head;
    ring.cmd_tail = &vm.entry(i)->cmd_tail;
  }
  return std::make_unique<ava::detail::ShmChannel>(std::move(map), l, ava::detail::ShmSide::Guest,
                                                   std::move(signals), "fake kmod", 0, ring);
}

std::vector<uint8_t> message(uint16_t kind, uint32_t func, const void *args, uint32_t len,
                             const std::vector<uint8_t> &payload = {}) {
  wire_test::MsgHeader h;
  h.kind = kind;
  h.spec_id = AVA_DEMO_SPEC_ID;
  h.func_id = func;
  h.flags = kind == AVA_MSG_CALL ? AVA_F_SYNC : 0;
  h.call_id = func + 1;
  return wire_test::build_message(h, args, len, payload.data(), payload.size());
}

ava::Status send(ava::Channel &ch, const std::vector<uint8_t> &m) {
  iovec iov{const_cast<uint8_t *>(m.data()), m.size()};
  return ch.send(&iov, 1);
}

// HELLO for the demo spec, then demo_version(): the worker really serves.
void hello_and_call(ava::Channel &ch, const std::function<std::string()> &log) {
  ava_hello h{};
  ava_hello_fill(&h, AVA_DEMO_SPEC_ID, AVA_DEMO_SPEC_HASH, AVA_DEMO_SPEC_NAME,
                 static_cast<uint64_t>(getpid()), "test");
  cr_assert(send(ch, message(AVA_MSG_HELLO, 0, &h, sizeof h)).is_ok());
  ava::MsgBuf reply;
  ava::Status st = ch.recv(reply, kBoundMs);
  cr_assert(st.is_ok(), "HELLO: %s\nvmhost log:\n%s", st.message.c_str(), log().c_str());
  cr_assert(reply.header()->kind == AVA_MSG_HELLO_ACK && reply.header()->status == AVA_OK,
            "HELLO_ACK status %d", reply.header()->status);
  ava_demo_demo_version_call call{};
  cr_assert(send(ch, message(AVA_MSG_CALL, AVA_DEMO_FN_DEMO_VERSION, &call, sizeof call)).is_ok());
  st = ch.recv(reply, kBoundMs);
  cr_assert(st.is_ok(), "demo_version: %s\nvmhost log:\n%s", st.message.c_str(), log().c_str());
  cr_assert(reply.header()->kind == AVA_MSG_REPLY && reply.header()->status == AVA_OK,
            "demo_version reply kind %u status %d", reply.header()->kind, reply.header()->status);
}

// One demo_version() call: the REPLY's status (or the channel's error).
int call_version(ava::Channel &ch) {
  ava_demo_demo_version_call call{};
  ava::Status st = send(ch, message(AVA_MSG_CALL, AVA_DEMO_FN_DEMO_VERSION, &call, sizeof call));
  ava::MsgBuf reply;
  if (st.is_ok())
    st = ch.recv(reply, kBoundMs);
  if (!st.is_ok())
    return st.code;
  return reply.header()->status;
}

struct Host {
  std::string dir = make_temp_dir();
  std::string sock = dir + "/ivshmem.sock";
  std::unique_ptr<BackgroundProc> proc;

  // host_toml: the host's configuration (--host-config), if any.
  explicit Host(const std::string &host_toml = "") {
    std::vector<std::string> argv = {
        AVA_BIN,      "vmhost", "--socket",   sock, "--slots", std::to_string(kSlots),
        "--ring-kib", "64",     "--heap-mib", "1",  "--spec",  "demo",
        "--ready-fd", "1"};
    if (!host_toml.empty()) {
      const std::string path = dir + "/host.toml";
      FILE *f = std::fopen(path.c_str(), "w");
      cr_assert(f != nullptr);
      std::fputs(host_toml.c_str(), f);
      std::fclose(f);
      argv.push_back("--host-config");
      argv.push_back(path);
    }
    proc = std::make_unique<BackgroundProc>(argv, std::vector<std::string>{});
    cr_assert(proc->wait_for_line("ready 2 3", kBoundMs), "vmhost did not become ready");
  }
  // vmhost's log so far, for failure messages.
  std::string log() {
    std::string seen;
    proc->wait_for_line("\x01never", 50, &seen);
    return seen;
  }
};

} // namespace

Test(vmhost, greets_like_an_ivshmem_server_and_serves_one_vm) {
  Host host;
  FakeVm vm;
  vm.connect_to(host.sock);
  // A second VM on the same memory would claim the same slots: refused.
  const int second = connect_unix(host.sock);
  cr_assert(second >= 0);
  char byte = 0;
  cr_expect(readable(second, kBoundMs) && recv(second, &byte, 1, 0) == 0,
            "a second VM must be disconnected at once");
  close(second);
}

Test(vmhost, serves_a_claimed_slot_and_frees_it_on_release) {
  Host host;
  FakeVm vm;
  vm.connect_to(host.sock);
  const uint32_t gen = vm.claim(0);
  {
    auto ch = guest_channel(vm, 0);
    hello_and_call(*ch, [&] { return host.log(); });
    ava_slot_entry *e = vm.entry(0);
    cr_assert(vm.host_state(0) == AVA_SLOT_SERVING && e->host_gen == gen);
    const pid_t worker = static_cast<pid_t>(e->worker_pid);
    cr_assert(worker > 0 && kill(worker, 0) == 0, "worker pid %d", worker);
    cr_expect(e->commands >= 2 && e->bytes_in > 0 && e->bytes_out > 0,
              "traffic counters: %lu commands", static_cast<unsigned long>(e->commands));
    cr_expect(vm.entry(1)->host_state == AVA_SLOT_IDLE, "slot 1 untouched");
    // The guest process ends: its kernel releases the slot.
    vm.release(0);
    cr_assert(eventually([&] { return vm.host_state(0) == AVA_SLOT_IDLE; }),
              "released slot not idle again");
    cr_expect(eventually([&] { return kill(worker, 0) != 0; }), "worker still alive");
  }
  // Claimable again: a second claim gets a fresh worker.
  const uint32_t gen2 = vm.claim(0);
  cr_assert(gen2 == gen + 1);
  auto ch = guest_channel(vm, 0);
  hello_and_call(*ch, [&] { return host.log(); });
  cr_expect(vm.entry(0)->host_gen == gen2);
}

Test(vmhost, a_killed_worker_breaks_its_slot_and_interrupts_the_guest) {
  Host host;
  FakeVm vm;
  vm.connect_to(host.sock);
  vm.claim(1);
  auto ch = guest_channel(vm, 1);
  hello_and_call(*ch, [&] { return host.log(); });
  const pid_t worker = static_cast<pid_t>(vm.entry(1)->worker_pid);
  cr_assert(worker > 0);
  kill(worker, SIGKILL);
  cr_assert(eventually([&] { return (vm.region_state(1) & AVA_REGION_BROKEN) != 0; }),
            "slot not marked broken after its worker died");
  cr_expect(readable(vm.irq_efds[AVA_DEV_SLOT_VECTOR(1)], kBoundMs), "no interrupt for slot 1");
  cr_expect(vm.host_state(1) == AVA_SLOT_IDLE);
  // A call now fails at once instead of waiting for an answer.
  ava_demo_demo_version_call call{};
  ava::Status st = send(*ch, message(AVA_MSG_CALL, AVA_DEMO_FN_DEMO_VERSION, &call, sizeof call));
  ava::MsgBuf reply;
  if (st.is_ok())
    st = ch->recv(reply, kBoundMs);
  cr_expect(st.code == AVA_E_CLOSED, "call on a broken slot: %d %s", st.code, st.message.c_str());
}

Test(vmhost, a_slot_with_a_lying_header_is_refused) {
  Host host;
  FakeVm vm;
  vm.connect_to(host.sock);
  const uint32_t gen = vm.claim(0, [](ava_region_hdr *r) { r->cmd_size = 12345; });
  cr_assert(eventually([&] { return (vm.region_state(0) & AVA_REGION_BROKEN) != 0; }),
            "a region with a bad ring size was not marked broken");
  cr_assert(eventually([&] { return vm.host_state(0) == AVA_SLOT_IDLE; }));
  cr_expect(vm.entry(0)->host_gen == gen);
  // The other slot still works.
  vm.claim(1);
  auto ch = guest_channel(vm, 1);
  hello_and_call(*ch, [&] { return host.log(); });
}

Test(vmhost, workers_end_when_the_vm_goes) {
  Host host;
  auto vm = std::make_unique<FakeVm>();
  vm->connect_to(host.sock);
  vm->claim(0);
  auto ch = guest_channel(*vm, 0);
  hello_and_call(*ch, [&] { return host.log(); });
  const pid_t worker = static_cast<pid_t>(vm->entry(0)->worker_pid);
  cr_assert(worker > 0);
  close(vm->sock);
  vm->sock = -1;
  cr_expect(eventually([&] { return kill(worker, 0) != 0; }), "worker outlived its VM");
  // A new VM may connect once the old one's workers are gone.
  ch.reset();
  vm.reset();
  FakeVm next;
  next.connect_to(host.sock);
  next.claim(0);
  auto ch2 = guest_channel(next, 0);
  hello_and_call(*ch2, [&] { return host.log(); });
}

Test(vmhost, the_slot_policy_refuses_calls_over_its_rate) {
  Host host;
  FakeVm vm;
  vm.connect_to(host.sock);
  // What ava.ko writes for `avactl policy 0 cmds-per-sec 1`.
  __atomic_store_n(&vm.entry(0)->cmds_per_sec, 1, __ATOMIC_RELAXED);
  __atomic_store_n(&vm.entry(0)->policy_flags, 0, __ATOMIC_RELEASE);
  vm.claim(0);
  auto ch = guest_channel(vm, 0);
  hello_and_call(*ch, [&] { return host.log(); });
  int ok = 0;
  int refused = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 20; ++i) {
    const int status = call_version(*ch);
    cr_assert(status == AVA_OK || status == AVA_E_POLICY, "call %d: status %d", i, status);
    (status == AVA_OK ? ok : refused) += 1;
  }
  // The bucket holds one second of the rate and refills at the rate: however
  // slow this machine is, no more calls pass than that allows.
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  cr_expect(ok <= 2 + static_cast<int>(seconds), "%d calls passed in %.1f s at 1/s", ok, seconds);
  cr_expect(refused > 0 || seconds >= 18, "20 calls in %.1f s at 1/s: none refused", seconds);
  cr_expect(vm.entry(0)->errors >= static_cast<uint64_t>(refused), "refusals not counted");
  cr_expect(host.log().find("commands/s") != std::string::npos, "the refusal is not explained");
  // Lifting the limit applies at once.
  __atomic_store_n(&vm.entry(0)->cmds_per_sec, 0, __ATOMIC_RELEASE);
  for (int i = 0; i < 20; ++i)
    cr_assert(call_version(*ch) == AVA_OK, "call %d after the limit was lifted", i);
}

namespace {

// Sends one raw CALL and returns the REPLY's status.
int raw_call(ava::Channel &ch, uint32_t func, const void *args, uint32_t len,
             const std::vector<uint8_t> &payload = {}) {
  ava::Status st = send(ch, message(AVA_MSG_CALL, func, args, len, payload));
  ava::MsgBuf reply;
  if (st.is_ok())
    st = ch.recv(reply, kBoundMs);
  return st.is_ok() ? reply.header()->status : st.code;
}

} // namespace

// The spec's command table polices every call before it runs; refusals are
// counted in the slot's errors (`avactl stats`), and other slots carry on.
Test(vmhost, calls_the_command_table_forbids_are_refused_and_counted) {
  Host host;
  FakeVm vm;
  vm.connect_to(host.sock);
  vm.claim(0);
  vm.claim(1);
  auto bad = guest_channel(vm, 0);
  auto good = guest_channel(vm, 1);
  hello_and_call(*bad, [&] { return host.log(); });
  hello_and_call(*good, [&] { return host.log(); });
  const uint64_t errors_before = vm.entry(0)->errors;

  struct Case {
    const char *what;
    uint32_t func;
    std::vector<uint8_t> args;
    std::vector<uint8_t> payload;
    int status;
  };
  // demo_obj_read's buffer is output only: sending bytes into it is refused.
  ava_demo_demo_obj_read_call read{};
  read.data.flags = AVA_BUF_PRESENT | AVA_BUF_IN;
  read.data.length = 8;
  read.size = 8;
  std::vector<uint8_t> read_args(sizeof read);
  std::memcpy(read_args.data(), &read, sizeof read);
  const Case cases[] = {
      {"unknown function id", AVA_DEMO_NFUNCS + 7, std::vector<uint8_t>(8), {}, AVA_E_FUNC},
      {"argument block larger than the spec's",
       AVA_DEMO_FN_DEMO_VERSION,
       std::vector<uint8_t>(16),
       {},
       AVA_E_LENGTH},
      {"argument block smaller than the spec's",
       AVA_DEMO_FN_DEMO_OBJ_READ,
       std::vector<uint8_t>(24),
       {},
       AVA_E_LENGTH},
      {"input bytes for an output buffer", AVA_DEMO_FN_DEMO_OBJ_READ, read_args,
       std::vector<uint8_t>(16), AVA_E_PROTO},
  };
  for (const Case &c : cases) {
    const int status =
        raw_call(*bad, c.func, c.args.data(), static_cast<uint32_t>(c.args.size()), c.payload);
    cr_expect_eq(status, c.status, "%s: status %d, expected %d\n%s", c.what, status, c.status,
                 host.log().c_str());
  }
  const uint64_t counted = vm.entry(0)->errors - errors_before;
  cr_expect(counted == std::size(cases), "%lu refusals counted for %zu bad calls",
            static_cast<unsigned long>(counted), std::size(cases));
  // The misbehaving slot still serves good calls, and the other slot saw nothing.
  cr_expect(call_version(*bad) == AVA_OK);
  cr_expect(call_version(*good) == AVA_OK);
  cr_expect(vm.entry(1)->errors == 0, "slot 1 has %lu errors",
            static_cast<unsigned long>(vm.entry(1)->errors));
}

namespace {

// demo_obj_create(name "q", size, &obj) by hand: the REPLY's status, and the
// new handle id when the call ran.
int create_obj(ava::Channel &ch, uint64_t size, uint64_t *obj) {
  ava_demo_demo_obj_create_call a{};
  a.name = ava_buf_desc{0, 2, AVA_BUF_PRESENT | AVA_BUF_IN, 0};
  a.size = size;
  a.out = ava_buf_desc{0, 8, AVA_BUF_PRESENT | AVA_BUF_OUT, 0};
  std::vector<uint8_t> m = message(AVA_MSG_CALL, AVA_DEMO_FN_DEMO_OBJ_CREATE, &a, sizeof a);
  m.resize(m.size() + 8, 0);
  m[sizeof(ava_msg_hdr) + sizeof a] = 'q';
  reinterpret_cast<ava_msg_hdr *>(m.data())->total_len = m.size();
  ava::Status st = send(ch, m);
  ava::MsgBuf reply;
  if (st.is_ok())
    st = ch.recv(reply, kBoundMs);
  if (!st.is_ok())
    return st.code;
  const ava_msg_hdr *h = reply.header();
  ava_demo_demo_obj_create_reply r{};
  const uint64_t at = sizeof(ava_msg_hdr) + sizeof(ava_reply_common);
  if (h->status == AVA_OK && reply.size() >= at + sizeof r) {
    std::memcpy(&r, reply.data() + at, sizeof r);
    const uint64_t payload = sizeof(ava_msg_hdr) + h->args_len;
    if (r.ret == 0 && payload + r.out.offset + 8 <= reply.size())
      std::memcpy(obj, reply.data() + payload + r.out.offset, 8);
  }
  return h->status;
}

int release_obj(ava::Channel &ch, uint64_t obj) {
  ava_demo_demo_obj_release_call a{};
  a.obj = obj;
  return raw_call(ch, AVA_DEMO_FN_DEMO_OBJ_RELEASE, &a, sizeof a);
}

} // namespace

// `avactl policy SLOT mem-quota N`: what the spec's calls allocate
// (ava_allocates_resource(device_memory, size) on demo_obj_create) is
// charged while the object lives; a call over the quota is refused with
// AVA_E_POLICY and counted, and a release makes room again.
Test(vmhost, allocations_over_the_slot_memory_quota_are_refused) {
  Host host;
  FakeVm vm;
  vm.connect_to(host.sock);
  __atomic_store_n(&vm.entry(0)->mem_quota, 10000, __ATOMIC_RELAXED);
  __atomic_store_n(&vm.entry(0)->policy_flags, 0, __ATOMIC_RELEASE);
  vm.claim(0);
  auto ch = guest_channel(vm, 0);
  hello_and_call(*ch, [&] { return host.log(); });
  uint64_t a = 0, b = 0, c = 0, d = 0;
  cr_assert_eq(create_obj(*ch, 6000, &a), AVA_OK, "%s", host.log().c_str());
  cr_assert(a != 0, "no handle for the first object");
  const uint64_t errors = vm.entry(0)->errors;
  cr_expect_eq(create_obj(*ch, 6000, &b), AVA_E_POLICY, "a second 6000-byte object in 10000");
  cr_expect(vm.entry(0)->errors == errors + 1, "the refusal was not counted");
  cr_expect(host.log().find("device_memory quota of 10000") != std::string::npos,
            "the refusal is not explained:\n%s", host.log().c_str());
  cr_expect_eq(create_obj(*ch, 4000, &c), AVA_OK, "4000 more fit exactly");
  cr_expect_eq(release_obj(*ch, a), AVA_OK);
  cr_expect_eq(create_obj(*ch, 6000, &d), AVA_OK, "after a release the room is back");
  // Lifting the quota applies at once.
  __atomic_store_n(&vm.entry(0)->mem_quota, 0, __ATOMIC_RELAXED);
  uint64_t big = 0;
  cr_expect_eq(create_obj(*ch, 1u << 20, &big), AVA_OK, "no quota, no limit");
}

// A policed claim (ivshmem.h): the worker consumes the command ring only up to
// the head ava.ko keeps in the slot table, and reports its tail there. What a
// process writes into the ring and the region header itself never runs.
Test(vmhost, a_policed_claim_runs_only_what_the_guest_kernel_checked) {
  Host host;
  FakeVm vm;
  vm.connect_to(host.sock);
  vm.claim(0, {}, AVA_CLAIM_POLICED);
  auto ch = guest_channel(vm, 0, true);
  hello_and_call(*ch, [&] { return host.log(); });
  ava_region_hdr *r = vm.region(0);
  const uint64_t head = __atomic_load_n(&vm.entry(0)->checked_head, __ATOMIC_ACQUIRE);
  cr_expect(head > 0 && __atomic_load_n(&vm.entry(0)->cmd_tail, __ATOMIC_ACQUIRE) == head,
            "checked_head %lu, cmd_tail %lu", static_cast<unsigned long>(head),
            static_cast<unsigned long>(vm.entry(0)->cmd_tail));
  cr_expect(__atomic_load_n(&r->cmd.head, __ATOMIC_ACQUIRE) == 0 &&
                __atomic_load_n(&r->cmd.tail, __ATOMIC_ACQUIRE) == 0,
            "the region header's command indices were used");

  // A process bypassing ava.ko: a well-formed call written straight into
  // the ring after what was checked, published through the region header.
  ava_demo_demo_version_call call{};
  std::vector<uint8_t> m = message(AVA_MSG_CALL, AVA_DEMO_FN_DEMO_VERSION, &call, sizeof call);
  uint8_t *data = vm.slot(0) + r->cmd_off;
  const uint64_t pos = head & (r->cmd_size - 1);
  const ava_ring_rec rec{static_cast<uint32_t>(m.size()), AVA_REC_MSG};
  std::memcpy(data + pos, &rec, sizeof rec);
  std::memcpy(data + pos + sizeof rec, m.data(), m.size());
  const uint64_t commands = vm.entry(0)->commands;
  __atomic_store_n(&r->cmd.head, head + sizeof rec + AVA_REC_ALIGN(m.size()), __ATOMIC_RELEASE);
  signal_fd(vm.host_efds[AVA_DEV_SLOT_VECTOR(0)]);
  ava::MsgBuf reply;
  ava::Status st = ch->recv(reply, 300);
  cr_expect(st.code == AVA_E_TIMEOUT, "the unchecked call was answered (status %d: %s)", st.code,
            st.message.c_str());
  cr_expect(vm.entry(0)->commands == commands, "the worker received the unchecked call");
  // Checked calls still run.
  cr_expect(call_version(*ch) == AVA_OK, "%s", host.log().c_str());
}

namespace {

// (offset, length) of each mapping of the VM's memory in process pid.
std::vector<std::pair<uint64_t, uint64_t>> vm_memory_mappings(pid_t pid) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  FILE *f = std::fopen(("/proc/" + std::to_string(pid) + "/maps").c_str(), "r");
  if (f == nullptr)
    return out;
  char line[512];
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strstr(line, "/memfd:ava-vm") == nullptr)
      continue;
    unsigned long long start = 0, end = 0, offset = 0;
    if (std::sscanf(line, "%llx-%llx %*s %llx", &start, &end, &offset) == 3)
      out.emplace_back(offset, end - start);
  }
  std::fclose(f);
  return out;
}

// Whether process pid holds a descriptor of the VM's memory.
bool holds_vm_memory_fd(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  for (int fd = 0; fd < 256; ++fd) {
    char target[256] = {};
    const ssize_t n = readlink((dir + "/" + std::to_string(fd)).c_str(), target, sizeof target - 1);
    if (n > 0 && std::strstr(target, "/memfd:ava-vm") != nullptr)
      return true;
  }
  return false;
}

} // namespace

// A hostile slot worker could read or scribble on every other slot (other
// processes of the VM) if it kept the VM's memory: it keeps its own slot and
// its own slot table entry's page mapped (not the other slots' entries, whose
// ring indices and state it could otherwise rewrite), and no descriptor to
// map more.
Test(vmhost, a_slot_worker_maps_only_its_own_slot) {
  Host host;
  FakeVm vm;
  vm.connect_to(host.sock);
  vm.claim(1);
  auto ch = guest_channel(vm, 1);
  hello_and_call(*ch, [&] { return host.log(); });
  const pid_t worker = static_cast<pid_t>(vm.entry(1)->worker_pid);
  cr_assert(worker > 0);
  const uint64_t slot_off = vm.hdr.slots_off + vm.hdr.slot_size;
  const auto mappings = vm_memory_mappings(worker);
  cr_expect(!mappings.empty(), "the worker maps nothing of the VM's memory");
  for (const auto &[offset, length] : mappings) {
    const bool table = offset == AVA_DEV_ENTRY_OFF(1) && length == AVA_DEV_ENTRY_STRIDE;
    const bool own_slot = offset >= slot_off && offset + length <= slot_off + vm.hdr.slot_size;
    cr_expect(table || own_slot, "slot 1's worker maps bytes %#llx+%#llx of the VM's memory",
              static_cast<unsigned long long>(offset), static_cast<unsigned long long>(length));
  }
  cr_expect(!holds_vm_memory_fd(worker), "slot 1's worker holds a descriptor of the VM's memory");
  FILE *f = std::fopen(("/proc/" + std::to_string(worker) + "/status").c_str(), "r");
  cr_assert(f != nullptr);
  char line[256];
  bool no_new_privs = false;
  while (std::fgets(line, sizeof line, f) != nullptr)
    no_new_privs |= std::strcmp(line, "NoNewPrivs:\t1\n") == 0;
  std::fclose(f);
  cr_expect(no_new_privs, "slot 1's worker may gain privileges");
  cr_expect_eq(call_version(*ch), AVA_OK, "the confined worker still serves");
}

// What one claim left in its slot (commands, replies, buffers) is gone
// before the host shows the slot idle for the next claimant.
Test(vmhost, a_released_slot_is_scrubbed_before_it_is_idle) {
  Host host;
  FakeVm vm;
  vm.connect_to(host.sock);
  vm.claim(0);
  {
    auto ch = guest_channel(vm, 0);
    hello_and_call(*ch, [&] { return host.log(); });
    // The guest's secrets: all over its heap; its rings hold its messages.
    const ava_region_hdr *r = vm.region(0);
    std::memset(vm.slot(0) + r->heap_off, 0x5a, r->heap_size);
  }
  // Another slot's bytes must survive the scrub of slot 0.
  uint8_t *other = vm.slot(1) + 4096;
  std::memset(other, 0xa5, 4096);
  vm.release(0);
  cr_assert(eventually([&] { return vm.host_state(0) == AVA_SLOT_IDLE; }), "slot 0 never idle");
  size_t dirty = 0;
  for (uint64_t i = 0; i < vm.hdr.slot_size; ++i)
    dirty += vm.slot(0)[i] != 0;
  cr_expect_eq(dirty, 0u, "%zu bytes of the released slot survived for the next claimant", dirty);
  size_t kept = 0;
  for (size_t i = 0; i < 4096; ++i)
    kept += other[i] == 0xa5;
  cr_expect_eq(kept, 4096u, "the scrub of slot 0 touched slot 1");
  // And the slot serves its next claim as before.
  vm.claim(0);
  auto ch = guest_channel(vm, 0);
  hello_and_call(*ch, [&] { return host.log(); });
}

// The usual end in a VM: the guest library says goodbye, its worker exits,
// and only then does the process close /dev/ava. The slot must not show
// IDLE (claimable) before the release, and then be scrubbed whole, its
// region header page included.
Test(vmhost, a_slot_released_after_its_worker_left_is_scrubbed) {
  Host host;
  FakeVm vm;
  vm.connect_to(host.sock);
  vm.claim(0);
  pid_t worker = 0;
  {
    auto ch = guest_channel(vm, 0);
    hello_and_call(*ch, [&] { return host.log(); });
    worker = static_cast<pid_t>(vm.entry(0)->worker_pid);
  } // goodbye
  cr_assert(eventually([&] { return vm.entry(0)->worker_pid == 0; }), "worker %d still shown",
            static_cast<int>(worker));
  cr_expect(vm.host_state(0) != AVA_SLOT_IDLE, "claimable while the guest still holds it");
  vm.release(0);
  cr_assert(eventually([&] { return vm.host_state(0) == AVA_SLOT_IDLE; }), "slot 0 never idle");
  size_t dirty = 0;
  for (uint64_t i = 0; i < vm.hdr.slot_size; ++i)
    dirty += vm.slot(0)[i] != 0;
  cr_expect_eq(dirty, 0u, "%zu bytes of the released slot survived", dirty);
  vm.claim(0);
  auto ch = guest_channel(vm, 0);
  hello_and_call(*ch, [&] { return host.log(); });
}

// The host's limits come from its own configuration: a VM that writes 0
// ("unlimited") into its slot's policy lifts nothing.
Test(vmhost, the_hosts_rate_limit_holds_whatever_the_vm_writes) {
  Host host("[guest]\ncmds_per_sec = 1\n");
  FakeVm vm;
  vm.connect_to(host.sock);
  __atomic_store_n(&vm.entry(0)->cmds_per_sec, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&vm.entry(0)->policy_flags, 0, __ATOMIC_RELEASE);
  vm.claim(0);
  auto ch = guest_channel(vm, 0);
  hello_and_call(*ch, [&] { return host.log(); });
  int refused = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 10; ++i)
    refused += call_version(*ch) == AVA_E_POLICY;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  cr_expect(refused > 0 || seconds >= 8, "10 calls in %.1f s under the host's 1/s: none refused",
            seconds);
  cr_expect(host.log().find("1 commands/s") != std::string::npos, "the refusal is not explained");
}

Test(vmhost, the_hosts_memory_quota_holds_whatever_the_vm_writes) {
  Host host("[guest]\ndevice_memory = 10000\n");
  FakeVm vm;
  vm.connect_to(host.sock);
  __atomic_store_n(&vm.entry(0)->mem_quota, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&vm.entry(0)->policy_flags, 0, __ATOMIC_RELEASE);
  vm.claim(0);
  auto ch = guest_channel(vm, 0);
  hello_and_call(*ch, [&] { return host.log(); });
  uint64_t a = 0, b = 0, c = 0;
  cr_expect_eq(create_obj(*ch, 6000, &a), AVA_OK, "%s", host.log().c_str());
  cr_expect_eq(create_obj(*ch, 6000, &b), AVA_E_POLICY,
               "a second 6000-byte object under the host's 10000");
  cr_expect(host.log().find("device_memory quota of 10000") != std::string::npos,
            "the refusal is not explained:\n%s", host.log().c_str());
  // The VM's own quota may be tighter than the host's.
  __atomic_store_n(&vm.entry(0)->mem_quota, 7000, __ATOMIC_RELAXED);
  cr_expect_eq(create_obj(*ch, 2000, &c), AVA_E_POLICY, "6000 + 2000 over the VM's own 7000");
}
