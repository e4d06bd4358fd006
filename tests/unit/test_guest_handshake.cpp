// SPDX-License-Identifier: MIT
// The guest library's side of the handshake (include/ava/wire.h): the HELLO
// it sends (its protocol versions and build, its configuration, its
// credential) and what it makes of each kind of HELLO_ACK: a worker of
// another protocol version or one that refuses the credential gets a line
// naming both sides, and an ACK that accepts with something never offered
// is refused.
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "test_guest_support.hpp"
#include "transport/hello.hpp"

using guest_fake::FakeWorker;
using guest_fake::Seen;
using guest_fake::StderrCapture;
using namespace wtest_guest;

namespace {

constexpr const char *kToken = "guest-token-0123456789";

std::string write_file(const std::string &path, const std::string &text, mode_t mode) {
  FILE *f = std::fopen(path.c_str(), "w");
  cr_assert_not_null(f);
  std::fputs(text.c_str(), f);
  std::fclose(f);
  cr_assert_eq(chmod(path.c_str(), mode), 0);
  return path;
}

void answer_one_call(FakeWorker &w) {
  Seen call;
  if (!w.expect(AVA_MSG_CALL, &call))
    return;
  ava_wtest_wt_get_tag_reply r{};
  r.ret = 3;
  w.reply(call, &r, sizeof r);
}

} // namespace

Test(guest_handshake, hello_carries_versions_build_configuration_and_credential) {
  FakeWorker w;
  w.configure_guest();
  const std::string credential =
      write_file(w.config_path() + ".token", std::string(kToken) + "\n", 0600);
  setenv("AVA_CREDENTIAL_FILE", credential.c_str(), 1);
  setenv("AVA_SPIN_US", "7", 1);
  w.start(answer_one_call);
  cr_expect_eq(wt_get_tag(), 3);
  ava_guest_shutdown(spec());
  w.join();
  cr_expect_eq(w.failure(), "", "fake worker: %s", w.failure().c_str());

  const std::vector<Seen> seen = w.seen();
  cr_assert(!seen.empty() && seen[0].hdr.kind == AVA_MSG_HELLO);
  const Seen &hello = seen[0];
  cr_assert_eq(hello.hdr.args_len, sizeof(ava_hello));
  ava_hello h;
  std::memcpy(&h, hello.args(), sizeof h);
  cr_expect_eq(h.proto_min, AVA_PROTO_MIN);
  cr_expect_eq(h.proto_max, AVA_PROTO_MAX);
  cr_expect_eq(ava::wire_text(h.build, sizeof h.build), std::string(ava::ava_build_text()));
  cr_expect_eq(h.flags, 0u);
  cr_expect_eq(h.session_id, 0u);
  cr_expect_eq(h.pid, static_cast<uint64_t>(getpid()));

  std::string token, config;
  const ava::Status s =
      ava::decode_hello_items(std::span<const uint8_t>(hello.payload(), hello.payload_len()),
                              [&](const ava::HelloItem &item) {
                                (item.kind == AVA_HELLO_ITEM_CREDENTIAL ? token : config) =
                                    item.bytes;
                                return ava::Status::ok();
                              });
  cr_assert(s.is_ok(), "%s", s.message.c_str());
  cr_expect_eq(token, kToken, "the file's token without its newline");
  for (const std::string &line :
       {std::string("channel = \"unix\"\n"), "worker = \"" + w.address() + "\"\n",
        std::string("connect_timeout_ms = 5000\n"), std::string("call_timeout_ms = 10000\n"),
        "credential_file = \"" + credential + "\"\n", std::string("env.AVA_SPIN_US = \"7\"\n")})
    cr_expect(config.find(line) != std::string::npos, "no '%s' in:\n%s", line.c_str(),
              config.c_str());
  cr_expect(config.find(kToken) == std::string::npos, "the token is in the configuration");
  unlink(credential.c_str());
}

Test(guest_handshake, a_credential_others_may_read_is_refused_before_connecting) {
  FakeWorker w;
  w.configure_guest();
  const std::string credential = write_file(w.config_path() + ".token", kToken, 0644);
  setenv("AVA_CREDENTIAL_FILE", credential.c_str(), 1);
  StderrCapture err;
  cr_expect_eq(wt_get_tag(), kErr);
  ava_guest_shutdown(spec());
  const std::string log = err.finish();
  cr_expect(log.find("cannot read the credential: " + credential +
                     ": error: holds a secret but others may read or write it") !=
                std::string::npos,
            "got:\n%s", log.c_str());
  cr_expect(!w.accept_guest(0), "the guest connected anyway");
  unlink(credential.c_str());
}

// One kind of HELLO_ACK and the line the program's stderr gets for it.
// Criterion copies parameters into the test's process, so no pointers.
struct Answer {
  char name[48];
  int32_t status;
  bool bare;
  uint16_t proto, proto_min, proto_max;
  uint64_t session_id;
  char says[224];
};

ParameterizedTestParameters(guest_handshake, each_answer_is_explained) {
  static Answer answers[] = {
      {"a protocol-1 worker", AVA_OK, true, 0, 0, 0, 0,
       "the worker speaks protocol 1 (ava 0.1, no version negotiation; its answer was AVA_OK), "
       "this guest library (ava " AVA_VERSION_STRING ") speaks protocol 2: update the worker"},
      {"no version in common", AVA_E_VERSION, false, 0, 3, 4, 0,
       "no protocol version in common: this guest library (ava " AVA_VERSION_STRING
       ") speaks protocol 2, the worker (ava fake) speaks protocol 3..4"},
      {"a credential required", AVA_E_ACCESS, false, 0, 2, 2, 0,
       "the worker requires a credential: set credential_file in the guest configuration or "
       "AVA_CREDENTIAL_FILE"},
      {"accepted with a version never offered", AVA_OK, false, 3, 2, 3, 9,
       "the worker accepted with protocol 3 and session 9"},
      {"accepted without a session", AVA_OK, false, 2, 2, 2, 0,
       "the worker accepted with protocol 2 and session 0"},
  };
  return cr_make_param_array(Answer, answers, sizeof answers / sizeof answers[0]);
}

ParameterizedTest(Answer *a, guest_handshake, each_answer_is_explained) {
  FakeWorker w;
  w.configure_guest();
  w.bare_ack = a->bare;
  const Answer copy = *a;
  w.shape_ack = [copy](ava_hello_ack *block) {
    block->proto = copy.proto;
    block->proto_min = copy.proto_min;
    block->proto_max = copy.proto_max;
    block->session_id = copy.session_id;
  };
  // The fake's handshake "fails" for any status but OK; these OKs must not
  // be served either, so its script stays empty.
  w.start([](FakeWorker &) {}, a->status);
  StderrCapture err;
  cr_expect_eq(wt_get_tag(), kErr, "%s", a->name);
  w.join();
  ava_guest_shutdown(spec());
  const std::string log = err.finish();
  cr_expect(log.find(a->says) != std::string::npos, "%s: got:\n%s", a->name, log.c_str());
}
