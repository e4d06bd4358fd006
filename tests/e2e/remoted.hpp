// SPDX-License-Identifier: MIT
// "Same as native, and really remoted": every comparison of a native run with
// a remoted one goes through here. Output and exit status alone prove
// nothing: a program that loaded the real library by mistake (a guest library
// directory that is not first, a missing guest library) prints exactly what
// the native run prints. So each remoted run also asks the worker for its
// session report (`ava run --report`, worker/session_report.hpp) and requires
// that the worker ran the program's calls of the spec under test.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "proc.hpp"

namespace remoted {

// What workers wrote to a report file: per spec, the sessions and calls.
struct WorkerReport {
  struct Totals {
    uint64_t sessions = 0; // sessions that ran at least one call
    uint64_t calls = 0;
    uint64_t sync = 0; // calls the program waited for
    uint64_t refused = 0;
    uint64_t staged = 0;   // staged transfers whose end went to the guest
    uint64_t in_place = 0; // transfers staged in their call's own message
  };
  std::map<std::string, Totals> specs;
  struct Session {
    std::string spec;
    uint64_t guest_pid = 0;
    uint64_t worker_pid = 0;
    uint64_t calls = 0;
    uint64_t sync = 0;
    uint64_t refused = 0;
    uint64_t staged = 0;
    uint64_t in_place = 0;
    uint64_t session_id = 0; // the handshake's; 0 when it never completed
    std::string peer;        // the credential's name, or "-"
  };
  std::vector<Session> sessions; // one per line, in order
  std::string text;              // the file as read, for messages
  std::string problem;           // unreadable file or a malformed line

  static WorkerReport read(const std::string &path);
  static WorkerReport parse(const std::string &text);
  Totals of(const std::string &spec) const;
};

// Empty when report shows at least min_sessions sessions of spec that ran
// calls; otherwise "not remoted: ..." saying what is missing.
std::string not_remoted_reason(const WorkerReport &report, const std::string &spec,
                               uint64_t min_sessions = 1);

struct Comparison {
  std::string spec;                  // the worker must have run this spec's calls
  std::vector<std::string> channels; // `ava run --channel` for each remoted run
  std::vector<std::string> native_env;
  std::vector<std::string> remoted_env;
  int timeout_ms = 120000;
  int native_exit = 0; // what the native run must exit with
  // Applied to both stdouts before comparing (e.g. clinfo's ICD loader lines).
  std::function<std::string(const std::string &)> normalize;
  // Extra `ava run` options before "--" (e.g. "--spec", "opencl").
  std::vector<std::string> run_args;
};

struct RemotedRun {
  ProcResult proc;
  WorkerReport report;
};

// `ava run --channel channel --report FILE [run_args] -- argv`, in a fresh
// temporary directory that is removed afterwards.
RemotedRun run_remoted(const std::string &ava_bin, const std::string &channel,
                       const std::vector<std::string> &argv, const Comparison &cmp);

// Everything in which r differs from the native run n, and
// "not remoted: ..." if the worker did not serve the program. Empty: the same.
std::vector<std::string> differences(const ProcResult &n, const RemotedRun &r,
                                     const Comparison &cmp);

// The native run, then one remoted run per channel, every difference a
// failed expectation (the native exit status an assertion).
void expect_same_as_native(const std::string &ava_bin, const std::vector<std::string> &argv,
                           const Comparison &cmp);

std::vector<std::string> split_lines(const std::string &text);
// The first differing lines of two outputs, numbered, diff style.
std::string line_diff(const std::string &expected, const std::string &got,
                      const char *expected_name, const char *got_name);

} // namespace remoted
