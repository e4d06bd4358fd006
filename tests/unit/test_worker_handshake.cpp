// SPDX-License-Identifier: MIT
// The worker's side of the handshake (include/ava/wire.h, worker/handshake.hpp):
// what a HELLO may offer (protocol versions, flags, items, a credential),
// what the HELLO_ACK answers (the version chosen, the worker's range and
// build, a session id and resume token, the credential's name), and that a
// refused guest is told why and then closed. Raw guests against the real
// serve_guest(); the pieces (item codec, version choice, credential table)
// are tested on their own below.
#include <criterion/criterion.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "transport/hello.hpp"
#include "worker/credentials.hpp"
#include "worker/testing/fake_guest.hpp"

using ava::Status;
using ava::testing::FakeGuest;
using ava::testing::RawMessage;
using ava::testing::Received;
using ava::testing::WorkerHarness;

namespace {

constexpr const char *kAliceToken = "alice-0123456789abcdef";
constexpr const char *kBobToken = "bob-fedcba9876543210";

ava_hello good_hello() {
  ava_hello h{};
  ava_hello_fill(&h, AVA_WTEST_SPEC_ID, AVA_WTEST_SPEC_HASH, AVA_WTEST_SPEC_NAME, 1, "test 1.0");
  return h;
}

std::vector<uint8_t> items(std::initializer_list<ava::HelloItem> list) {
  return ava::encode_hello_items(std::vector<ava::HelloItem>(list));
}

RawMessage hello_with(const ava_hello &h, const std::vector<uint8_t> &payload = {}) {
  RawMessage m(AVA_MSG_HELLO, 0, &h, sizeof h, payload);
  m.hdr().spec_id = h.spec_id;
  return m;
}

struct Offer {
  const char *name;
  std::function<RawMessage()> build;
  int expected;
  bool bare = false;          // a protocol-1 guest gets a bare status
  const char *peer = nullptr; // the ACK's peer when accepted
};

const Offer kOffers[] = {
    {"protocol 2", [] { return hello_with(good_hello()); }, AVA_OK},
    {"a wide range picks the highest in common",
     [] {
       ava_hello h = good_hello();
       h.proto_min = 1;
       h.proto_max = 9;
       return hello_with(h);
     },
     AVA_OK},
    {"protocol 1 (the 56-byte block)",
     [] {
       ava_hello h = good_hello();
       RawMessage m(AVA_MSG_HELLO, 0, &h, AVA_HELLO_V1_SIZE);
       m.hdr().spec_id = h.spec_id;
       return m;
     },
     AVA_E_VERSION, true},
    {"only later versions",
     [] {
       ava_hello h = good_hello();
       h.proto_min = AVA_PROTO_MAX + 1;
       h.proto_max = AVA_PROTO_MAX + 3;
       return hello_with(h);
     },
     AVA_E_VERSION},
    {"an empty range",
     [] {
       ava_hello h = good_hello();
       h.proto_min = AVA_PROTO_MAX;
       h.proto_max = AVA_PROTO_MIN - 1;
       return hello_with(h);
     },
     AVA_E_VERSION},
    {"no versions at all",
     [] {
       ava_hello h = good_hello();
       h.proto_min = h.proto_max = 0;
       return hello_with(h);
     },
     AVA_E_VERSION},
    {"a block of another size",
     [] {
       uint8_t block[sizeof(ava_hello) + 8] = {};
       ava_hello h = good_hello();
       std::memcpy(block, &h, sizeof h);
       RawMessage m(AVA_MSG_HELLO, 0, block, sizeof block);
       m.hdr().spec_id = h.spec_id;
       return m;
     },
     AVA_E_PROTO},
    {"an unknown flag",
     [] {
       ava_hello h = good_hello();
       h.flags = 0x80;
       return hello_with(h);
     },
     AVA_E_PROTO},
    {"reserved bits",
     [] {
       ava_hello h = good_hello();
       h.reserved = 1;
       return hello_with(h);
     },
     AVA_E_PROTO},
    {"a session id without RESUME",
     [] {
       ava_hello h = good_hello();
       h.session_id = 7;
       return hello_with(h);
     },
     AVA_E_PROTO},
    {"RESUME (this worker cannot)",
     [] {
       ava_hello h = good_hello();
       h.flags = AVA_HELLO_RESUME;
       h.session_id = 7;
       std::memset(h.resume_token, 1, sizeof h.resume_token);
       return hello_with(h);
     },
     AVA_E_UNSUPPORTED},
    {"the configuration and an unknown item",
     [] {
       return hello_with(good_hello(), items({{AVA_HELLO_ITEM_CONFIG, "channel = \"unix\"\n"},
                                              {999, "from a later version"}}));
     },
     AVA_OK},
    {"a truncated item header", [] { return hello_with(good_hello(), std::vector<uint8_t>(4, 0)); },
     AVA_E_PROTO},
    {"an item longer than the message",
     [] {
       std::vector<uint8_t> b = items({{AVA_HELLO_ITEM_CONFIG, "x"}});
       b[4] = 200; // len
       return hello_with(good_hello(), b);
     },
     AVA_E_PROTO},
    {"non-zero padding",
     [] {
       std::vector<uint8_t> b = items({{AVA_HELLO_ITEM_CONFIG, "x"}});
       b.back() = 1;
       return hello_with(good_hello(), b);
     },
     AVA_E_PROTO},
    {"an item kind twice",
     [] {
       return hello_with(good_hello(),
                         items({{AVA_HELLO_ITEM_CONFIG, "a"}, {AVA_HELLO_ITEM_CONFIG, "b"}}));
     },
     AVA_E_PROTO},
    {"items above AVA_HELLO_ITEMS_MAX",
     [] {
       const std::string big(AVA_HELLO_ITEMS_MAX, 'x');
       return hello_with(good_hello(), items({{AVA_HELLO_ITEM_CONFIG, big}}));
     },
     AVA_E_PROTO},
};

// The same offers with a credential table of alice and bob.
const Offer kCredentialOffers[] = {
    {"no credential", [] { return hello_with(good_hello()); }, AVA_E_ACCESS},
    {"alice's",
     [] {
       return hello_with(good_hello(), items({{AVA_HELLO_ITEM_CREDENTIAL, kAliceToken}}));
     },
     AVA_OK, false, "alice"},
    {"bob's, after the configuration",
     [] {
       return hello_with(good_hello(), items({{AVA_HELLO_ITEM_CONFIG, "worker = \"x\"\n"},
                                              {AVA_HELLO_ITEM_CREDENTIAL, kBobToken}}));
     },
     AVA_OK, false, "bob"},
    {"a wrong token",
     [] {
       return hello_with(good_hello(),
                         items({{AVA_HELLO_ITEM_CREDENTIAL, "mallory-0123456789abc"}}));
     },
     AVA_E_ACCESS},
    {"a prefix of alice's",
     [] {
       const std::string prefix = std::string(kAliceToken).substr(0, 10);
       return hello_with(good_hello(), items({{AVA_HELLO_ITEM_CREDENTIAL, prefix}}));
     },
     AVA_E_ACCESS},
    {"alice's with a byte more",
     [] {
       const std::string longer = std::string(kAliceToken) + "x";
       return hello_with(good_hello(), items({{AVA_HELLO_ITEM_CREDENTIAL, longer}}));
     },
     AVA_E_ACCESS},
    {"an empty credential",
     [] {
       return hello_with(good_hello(), items({{AVA_HELLO_ITEM_CREDENTIAL, ""}}));
     },
     AVA_E_ACCESS},
};

std::string text_of(const char *field, size_t size) {
  return ava::wire_text(field, size);
}

// Sends each offer on a connection of its own (the harness's index-th) and
// checks the answer; returns the accepted sessions' ids.
std::vector<uint64_t> run_offers(WorkerHarness &harness, const Offer *offers, size_t count) {
  std::vector<uint64_t> ids;
  for (size_t i = 0; i < count; i++) {
    const Offer &c = offers[i];
    std::unique_ptr<FakeGuest> guest = harness.connect();
    cr_assert(guest != nullptr);
    RawMessage m = c.build();
    cr_assert(guest->send(m).is_ok(), "%s", c.name);
    Received ack;
    Status s = guest->recv(&ack);
    cr_assert(s.is_ok(), "%s: no answer: %s", c.name, s.message.c_str());
    cr_expect_eq(ack.hdr.kind, AVA_MSG_HELLO_ACK, "%s", c.name);
    cr_expect_eq(ack.hdr.status, c.expected, "%s: status %d", c.name, ack.hdr.status);
    if (c.bare) {
      cr_expect_eq(ack.args.size(), 0u, "%s: a protocol-1 guest reads no block", c.name);
    } else {
      ava_hello_ack block{};
      cr_assert_eq(ack.args.size(), sizeof block, "%s: block of %zu bytes", c.name,
                   ack.args.size());
      std::memcpy(&block, ack.args.data(), sizeof block);
      cr_expect_eq(block.proto_min, AVA_PROTO_MIN, "%s", c.name);
      cr_expect_eq(block.proto_max, AVA_PROTO_MAX, "%s", c.name);
      cr_expect_eq(text_of(block.build, sizeof block.build), std::string(ava::ava_build_text()),
                   "%s", c.name);
      cr_expect_eq(block.flags & AVA_ACK_RESUMABLE, 0u, "%s: resuming is not built", c.name);
      if (c.expected == AVA_OK) {
        cr_expect_eq(block.proto, AVA_PROTO_MAX, "%s: version %u", c.name, block.proto);
        cr_expect_neq(block.session_id, 0u, "%s", c.name);
        cr_expect_eq(text_of(block.peer, sizeof block.peer), c.peer ? c.peer : "", "%s", c.name);
        ids.push_back(block.session_id);
      } else {
        cr_expect_eq(block.proto, 0u, "%s", c.name);
        cr_expect_eq(block.session_id, 0u, "%s: a refusal opens no session", c.name);
      }
    }
    if (c.expected == AVA_OK) {
      // Served: a call goes through, and a goodbye ends the session cleanly.
      cr_expect_eq(guest->add(2, 3), 5, "%s: no call after the handshake", c.name);
      guest->goodbye();
      cr_expect(harness.finish(i).is_ok(), "%s", c.name);
    } else {
      cr_expect_eq(guest->recv(&ack).code, AVA_E_CLOSED, "%s: still open", c.name);
      cr_expect_eq(harness.finish(i).code, c.expected, "%s", c.name);
    }
  }
  return ids;
}

std::string temp_file(const std::string &text, mode_t mode) {
  char path[] = "/tmp/ava-credentials-XXXXXX";
  const int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  cr_assert_eq(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(fd);
  chmod(path, mode);
  return path;
}

std::string alice_and_bob() {
  return std::string("# name token\nalice ") + kAliceToken + "\n\n  bob\t" + kBobToken + "  \n";
}

} // namespace

Test(worker_handshake, each_offer_gets_its_answer_and_a_refusal_closes, .timeout = 60) {
  WorkerHarness harness;
  harness.plugins().add(ava_worker_spec_export());
  const std::vector<uint64_t> ids = run_offers(harness, kOffers, std::size(kOffers));
  cr_expect_eq(ids.size(), 3u);
  for (size_t i = 1; i < ids.size(); i++)
    cr_expect_neq(ids[i], ids[0], "two sessions share id %llx",
                  static_cast<unsigned long long>(ids[0]));
}

Test(worker_handshake, a_credential_table_admits_only_its_tokens, .timeout = 60) {
  const std::string path = temp_file(alice_and_bob(), 0600);
  auto table = std::make_shared<ava::CredentialTable>();
  const Status loaded = ava::CredentialTable::load(path, table.get());
  unlink(path.c_str());
  cr_assert(loaded.is_ok(), "%s", loaded.message.c_str());
  ava::WorkerOptions options;
  options.credentials = table;
  char report[] = "/tmp/ava-handshake-report-XXXXXX";
  close(mkstemp(report));
  options.report_file = report;
  WorkerHarness harness(options);
  harness.plugins().add(ava_worker_spec_export());
  const std::vector<uint64_t> ids =
      run_offers(harness, kCredentialOffers, std::size(kCredentialOffers));
  cr_assert_eq(ids.size(), 2u);
  // The report names each accepted session by its id and its credential's name.
  std::ifstream in(report);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  unlink(report);
  const char *names[] = {"alice", "bob"};
  for (size_t i = 0; i < ids.size(); i++) {
    char want[64];
    std::snprintf(want, sizeof want, " id=%016llx peer=%s\n",
                  static_cast<unsigned long long>(ids[i]), names[i]);
    cr_expect(text.find(want) != std::string::npos, "no '%s' in:\n%s", want, text.c_str());
  }
  cr_expect(text.find(" id=0000000000000000 peer=-\n") != std::string::npos,
            "a refused guest's line: %s", text.c_str());
}

Test(worker_handshake, items_round_trip_in_order_with_padding) {
  const std::string config = "channel = \"shm\"\n";
  const std::vector<uint8_t> b =
      items({{AVA_HELLO_ITEM_CREDENTIAL, "0123456789"}, {AVA_HELLO_ITEM_CONFIG, config}});
  cr_expect_eq(b.size(), 8u + 16u + 8u + 16u);
  std::vector<std::pair<uint32_t, std::string>> seen;
  const Status s = ava::decode_hello_items(b, [&](const ava::HelloItem &item) {
    seen.emplace_back(item.kind, std::string(item.bytes));
    return Status::ok();
  });
  cr_assert(s.is_ok(), "%s", s.message.c_str());
  cr_assert_eq(seen.size(), 2u);
  cr_expect(seen[0] == std::make_pair(AVA_HELLO_ITEM_CREDENTIAL, std::string("0123456789")));
  cr_expect(seen[1] == std::make_pair(AVA_HELLO_ITEM_CONFIG, config));
  cr_expect(ava::decode_hello_items({}, [](const ava::HelloItem &) {
              return Status::error(AVA_E_PROTO, "no items expected");
            }).is_ok());
}

Test(worker_handshake, the_version_is_the_highest_in_both_ranges) {
  struct Case {
    uint16_t gmin, gmax, wmin, wmax, chosen;
  };
  const Case cases[] = {
      {2, 2, 2, 2, 2}, {1, 9, 2, 3, 3}, {2, 3, 3, 5, 3}, {3, 4, 1, 2, 0},
      {1, 1, 2, 2, 0}, {3, 2, 1, 9, 0}, {0, 0, 0, 0, 0}, {0, 2, 0, 2, 2},
  };
  for (const Case &c : cases)
    cr_expect_eq(ava::choose_protocol(c.gmin, c.gmax, c.wmin, c.wmax), c.chosen,
                 "guest %u..%u, worker %u..%u", c.gmin, c.gmax, c.wmin, c.wmax);
  cr_expect_eq(ava::protocol_range_text(2, 2), "2");
  cr_expect_eq(ava::protocol_range_text(2, 4), "2..4");
}

Test(worker_handshake, wire_text_takes_what_a_peer_sends_without_trusting_it) {
  const char unterminated[4] = {'a', 'b', 'c', 'd'};
  cr_expect_eq(ava::wire_text(unterminated, sizeof unterminated), "");
  const char odd[8] = {'a', '\n', '\x80', 'z', 0, 'x', 0, 0};
  cr_expect_eq(ava::wire_text(odd, sizeof odd), "a??z");
}

Test(worker_handshake, credential_files_are_checked_line_by_line) {
  struct Case {
    const char *name;
    std::string text;
    const char *error; // a part of the message, or nullptr: parses
  };
  const std::string t = "0123456789abcdef"; // 16 characters: the shortest token
  const Case cases[] = {
      {"two entries, comments, blank lines", alice_and_bob(), nullptr},
      {"the shortest token", "a " + t + "\n", nullptr},
      {"CRLF line ends", "a " + t + "\r\nb x" + t + "\r\n", nullptr},
      {"no token", "alice\n", ":1: expected 'name token'"},
      {"a token too short", "a " + t.substr(1) + "\n", ":1: a token has 16 to"},
      {"a space in the token", "a " + t + " more\n", ":1: a token is printable ASCII"},
      {"a name too long", std::string(16, 'n') + " " + t + "\n", "longer than 15"},
      {"a name with a slash", "a/b " + t + "\n", ":1: a name takes"},
      {"a name twice", "a " + t + "\na x" + t + "\n", ":2: the name 'a' is listed twice"},
      {"a token twice", "a " + t + "\nb " + t + "\n", ":2: the token of 'b' is also that of 'a'"},
      {"nothing listed", "# none\n", "lists no credential"},
  };
  for (const Case &c : cases) {
    ava::CredentialTable table;
    const Status s = ava::CredentialTable::parse(c.text, "creds", &table);
    if (c.error == nullptr) {
      cr_expect(s.is_ok(), "%s: %s", c.name, s.message.c_str());
    } else {
      cr_expect(!s.is_ok(), "%s: parsed", c.name);
      cr_expect(s.message.find(c.error) != std::string::npos, "%s: '%s'", c.name,
                s.message.c_str());
    }
  }
  ava::CredentialTable table;
  cr_assert(ava::CredentialTable::parse(alice_and_bob(), "creds", &table).is_ok());
  cr_expect_eq(table.size(), 2u);
  const std::string *name = table.match(kBobToken);
  cr_expect(name != nullptr && *name == "bob");
  cr_expect_null(table.match(""));
  cr_expect_null(table.match(std::string(kBobToken) + "x"));
}

Test(worker_handshake, a_credential_file_others_may_read_is_refused) {
  const std::string readable = temp_file(alice_and_bob(), 0644);
  ava::CredentialTable table;
  Status s = ava::CredentialTable::load(readable, &table);
  unlink(readable.c_str());
  cr_expect(!s.is_ok() && s.message.find("others may read") != std::string::npos, "%s",
            s.message.c_str());
  s = ava::CredentialTable::load("/nonexistent/ava-credentials", &table);
  cr_expect(!s.is_ok() && s.message.find("No such file") != std::string::npos, "%s",
            s.message.c_str());
}
