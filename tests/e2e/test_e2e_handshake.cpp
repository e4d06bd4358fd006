// SPDX-License-Identifier: MIT
// The handshake end to end: a real `ava worker` whose host configuration
// requires credentials (`[guest] credentials = FILE`) serves the demo
// program only when its guest library shows a listed token
// (AVA_CREDENTIAL_FILE), knows the guest by the token's name in its session
// report, and tells a guest without one, or with a wrong one, why it was
// refused; a credentials file others may read stops the worker at start.
#include <criterion/criterion.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "demo_worker.hpp"
#include "e2e_env.hpp"
#include "proc.hpp"
#include "remoted.hpp"

namespace {

constexpr int kTimeoutMs = 60000;
constexpr const char *kAlice = "alice-token-0123456789";

struct Secrets {
  std::string dir = make_temp_dir();
  std::string table = dir + "/credentials";
  std::string alice = dir + "/alice.token";
  std::string wrong = dir + "/wrong.token";
  explicit Secrets(mode_t table_mode = 0600) {
    chmod(dir.c_str(), 0755);
    write(table, std::string("alice ") + kAlice + "\n", table_mode);
    write(alice, std::string(kAlice) + "\n", 0600);
    write(wrong, "mallory-token-0123456789\n", 0600);
  }
  ~Secrets() {
    const std::string rm = "rm -rf " + dir;
    [[maybe_unused]] int rc = system(rm.c_str());
  }
  static void write(const std::string &path, const std::string &text, mode_t mode) {
    std::ofstream(path) << text;
    chmod(path.c_str(), mode);
  }
  std::string host_toml() const { return "[guest]\ncredentials = \"" + table + "\"\n"; }
};

std::vector<std::string> with_credential(const std::string &address, const std::string &file) {
  std::vector<std::string> env = guest_env(address);
  env.push_back("AVA_CREDENTIAL_FILE=" + file);
  return env;
}

} // namespace

Test(e2e_handshake, a_worker_requiring_credentials_serves_only_listed_tokens, .timeout = 180) {
  Secrets secrets;
  Worker w({}, secrets.host_toml());
  cr_assert(w.ready, "the worker did not start:\n%s", w.output.c_str());
  const ProcResult native = run_proc({DEMO_APP}, clean_env(), kTimeoutMs);
  cr_assert_eq(native.exit_code, 0, "native demo_app: %s", native.err.c_str());

  const ProcResult alice =
      run_proc({DEMO_APP}, with_credential(w.address, secrets.alice), kTimeoutMs);
  cr_expect_eq(alice.exit_code, 0, "with alice's token: %s", alice.err.c_str());
  cr_expect_eq(alice.out, native.out);

  const ProcResult none = run_proc({DEMO_APP}, guest_env(w.address), kTimeoutMs);
  cr_expect_neq(none.exit_code, 0);
  cr_expect(none.err.find("the worker requires a credential: set credential_file in the guest "
                          "configuration or AVA_CREDENTIAL_FILE") != std::string::npos,
            "without a token: %s", none.err.c_str());

  const ProcResult wrong =
      run_proc({DEMO_APP}, with_credential(w.address, secrets.wrong), kTimeoutMs);
  cr_expect_neq(wrong.exit_code, 0);
  cr_expect(wrong.err.find("the worker did not accept the credential in " + secrets.wrong) !=
                std::string::npos,
            "with a wrong token: %s", wrong.err.c_str());

  // One session served, known as alice; the refused ones ran nothing.
  const remoted::WorkerReport r = w.stop();
  cr_assert_eq(r.problem, "", "%s", r.problem.c_str());
  size_t served = 0;
  for (const auto &s : r.sessions) {
    if (s.calls > 0) {
      served++;
      cr_expect_eq(s.peer, "alice", "%s", r.text.c_str());
      cr_expect_neq(s.session_id, 0u, "%s", r.text.c_str());
    } else {
      cr_expect_eq(s.session_id, 0u, "a refused guest got a session: %s", r.text.c_str());
    }
  }
  cr_expect_eq(served, 1u, "%s", r.text.c_str());
  cr_expect_eq(r.sessions.size(), 3u, "%s", r.text.c_str());
}

Test(e2e_handshake, a_credentials_file_others_may_read_stops_the_worker, .timeout = 60) {
  Secrets secrets(0644);
  const std::string host = secrets.dir + "/host.toml";
  Secrets::write(host, secrets.host_toml(), 0644);
  const ProcResult r = run_proc({AVA_BIN, "worker", "--spec", "demo", "--listen",
                                 "unix:" + secrets.dir + "/w.sock", "--host-config", host},
                                clean_env(), kTimeoutMs);
  cr_expect_neq(r.exit_code, 0);
  cr_expect(r.err.find("guest.credentials: " + secrets.table +
                       ": error: holds a secret but others may read or write it") !=
                std::string::npos,
            "%s", r.err.c_str());
}
