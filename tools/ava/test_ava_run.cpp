// SPDX-License-Identifier: MIT
// `ava` as a process: exit statuses, usage errors, the environment given to
// the program, and the private worker's lifecycle (it needs no plugins).
#include <criterion/criterion.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#ifndef AVA_EXE
#error "AVA_EXE must name the ava executable under test"
#endif

namespace {

struct Result {
  int status = -1;
  std::string out;
};

// Runs a shell command line with ava's configuration isolated from the host's.
Result shell(const std::string &command) {
  std::string isolated = "unset AVA_WORKER AVA_CHANNEL; export AVA_CONFIG=/dev/null; " + command;
  Result result;
  // The test drives `ava run` through the shell on purpose.
  FILE *pipe = popen(isolated.c_str(), "r"); // NOLINT(cert-env33-c)
  if (pipe == nullptr)
    return result;
  char buf[512];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0)
    result.out.append(buf, n);
  int status = pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

const std::string kAva = AVA_EXE;

bool path_exists(const std::string &path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

} // namespace

Test(ava_run, version_and_help) {
  Result version = shell(kAva + " version");
  cr_expect_eq(version.status, 0);
  cr_expect_eq(version.out, "ava 0.2\n");
  Result help = shell(kAva + " --help");
  cr_expect_eq(help.status, 0);
  cr_expect(help.out.find("ava run") != std::string::npos);
}

Test(ava_run, usage_errors_exit_2) {
  const std::vector<std::string> cases = {
      "",
      "frobnicate",
      "run",
      "run --",
      "run --bogus -- true",
      "run --channel vsock -- true",
      "run --worker tcp:host:notaport -- true",
      "worker",
      "worker --listen",
      "worker --listen unix:/tmp/x --ready-fd 987",
  };
  for (const std::string &args : cases) {
    Result r = shell(kAva + " " + args + " 2>&1");
    cr_expect_eq(r.status, 2, "'ava %s' exited %d", args.c_str(), r.status);
    cr_expect(r.out.rfind("ava: ", 0) == 0, "'ava %s' said: %s", args.c_str(), r.out.c_str());
  }
}

Test(ava_run, program_not_found_is_127) {
  Result r = shell(kAva + " run -- /nonexistent/program 2>&1");
  cr_expect_eq(r.status, 127);
  cr_expect_eq(r.out, "ava: /nonexistent/program: command not found\n");
  r = shell(kAva + " run -- no-such-program-anywhere 2>&1");
  cr_expect_eq(r.status, 127);
  cr_expect_eq(r.out, "ava: no-such-program-anywhere: command not found\n");
}

// With AVA_WORKER set, ava starts no worker and only prepares the environment.
Test(ava_run, exit_status_and_environment_with_configured_worker) {
  // The guest directory does not exist: ava warns on stderr, which is not under test here.
  const std::string prefix =
      "exec 2>/dev/null; AVA_WORKER=unix:/nonexistent/w.sock AVA_GUEST_LIB_DIR=/guest " + kAva;
  cr_expect_eq(shell(prefix + " run -- sh -c 'exit 7'").status, 7);
  cr_expect_eq(shell(prefix + " run -- sh -c 'kill -TERM $$'").status, 128 + 15);
  Result r = shell("export LD_LIBRARY_PATH=/old; " + prefix +
                   " run -- sh -c 'echo \"$LD_LIBRARY_PATH $AVA_WORKER\"'");
  cr_expect_eq(r.status, 0);
  cr_expect_eq(r.out, "/guest:/old unix:/nonexistent/w.sock\n");
  r = shell(kAva +
            " run --worker 127.0.0.1:9 --channel tcp -- sh -c 'echo \"$AVA_WORKER $AVA_CHANNEL\"'");
  cr_expect_eq(r.out, "tcp:127.0.0.1:9 tcp\n");
}

Test(ava_run, private_worker_lifecycle) {
  char plugins[] = "/tmp/ava-test-plugins.XXXXXX";
  cr_assert_not_null(mkdtemp(plugins));
  const std::string prefix = std::string("AVA_PLUGIN_DIR=") + plugins + " " + kAva;

  Result r = shell(prefix + " run --channel unix -- sh -c 'echo \"$AVA_CHANNEL $AVA_WORKER\"'");
  cr_expect_eq(r.status, 0);
  cr_expect(r.out.rfind("unix unix:/", 0) == 0, "got: %s", r.out.c_str());
  // Only the program's line: the worker must not write to the program's stdout.
  cr_expect(r.out.find('\n') == r.out.size() - 1, "got: %s", r.out.c_str());
  std::string socket = r.out.substr(std::string("unix unix:").size());
  socket.pop_back();
  cr_expect(!path_exists(socket.substr(0, socket.rfind('/'))), "temp dir of %s left behind",
            socket.c_str());

  r = shell(prefix + " run --channel tcp -- sh -c 'echo \"$AVA_CHANNEL $AVA_WORKER\"; exit 3'");
  cr_expect_eq(r.status, 3);
  cr_expect(r.out.rfind("tcp tcp:127.0.0.1:", 0) == 0, "got: %s", r.out.c_str());
  cr_expect(r.out.find(":0\n") == std::string::npos, "the real port is reported: %s",
            r.out.c_str());

  r = shell(prefix + " run --channel shm -- sh -c 'echo \"$AVA_CHANNEL $AVA_WORKER\"'");
  cr_expect_eq(r.status, 0);
  cr_expect(r.out.rfind("shm shm:/", 0) == 0 && r.out.find("/worker.sock\n") != std::string::npos,
            "got: %s", r.out.c_str());

  // Table: what a private worker is reached by when the user names no channel
  // on the command line: shm, the fastest on one machine, unless AVA_CHANNEL
  // says otherwise.
  struct {
    const char *env;
    const char *starts;
  } defaults[] = {{"unset AVA_CHANNEL;", "shm shm:/"},
                  {"export AVA_CHANNEL=;", "shm shm:/"},
                  {"export AVA_CHANNEL=tcp;", "tcp tcp:127.0.0.1:"},
                  {"export AVA_CHANNEL=unix;", "unix unix:/"}};
  for (const auto &d : defaults) {
    r = shell(std::string(d.env) + " " + prefix +
              " run -- sh -c 'echo \"$AVA_CHANNEL $AVA_WORKER\"'");
    cr_expect_eq(r.status, 0, "%s", d.env);
    cr_expect(r.out.rfind(d.starts, 0) == 0, "%s got: %s", d.env, r.out.c_str());
  }
  rmdir(plugins);
}
