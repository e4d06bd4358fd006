// SPDX-License-Identifier: MIT
#include "remoted.hpp"

#include "worker_mode.hpp"

#include <criterion/criterion.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace remoted {
namespace {

// "key=value" of a report line, or false.
bool field(const std::string &word, const char *key, std::string *value) {
  const std::string prefix = std::string(key) + "=";
  if (!word.starts_with(prefix))
    return false;
  *value = word.substr(prefix.size());
  return true;
}

bool parse_u64(const std::string &text, uint64_t *out) {
  if (text.empty() || text.size() > 19 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  *out = std::stoull(text);
  return true;
}

// A session id: exactly 16 hex digits.
bool parse_hex16(const std::string &text, uint64_t *out) {
  if (text.size() != 16 || !std::all_of(text.begin(), text.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
      }))
    return false;
  *out = std::stoull(text, nullptr, 16);
  return true;
}

std::string label_of(const std::string &channel, const std::vector<std::string> &argv) {
  std::string label = "[" + channel;
  for (const std::string &a : argv)
    label += " " + a.substr(a.find_last_of('/') + 1);
  return label + "]";
}

} // namespace

WorkerReport WorkerReport::read(const std::string &path) {
  WorkerReport report;
  std::ifstream in(path);
  if (!in) {
    report.problem = "no report file " + path + " (no worker session ended)";
    return report;
  }
  std::ostringstream all;
  all << in.rdbuf();
  return parse(all.str());
}

WorkerReport WorkerReport::parse(const std::string &text) {
  WorkerReport report;
  report.text = text;
  for (const std::string &line : split_lines(report.text)) {
    std::istringstream words(line);
    std::string word, spec, pid, worker, calls, sync, refused, staged, in_place, id, peer;
    words >> word;
    bool ok = word == "session";
    while (ok && words >> word)
      ok = field(word, "spec", &spec) || field(word, "pid", &pid) ||
           field(word, "worker", &worker) || field(word, "calls", &calls) ||
           field(word, "sync", &sync) || field(word, "refused", &refused) ||
           field(word, "staged", &staged) || field(word, "in_place", &in_place) ||
           field(word, "id", &id) || field(word, "peer", &peer);
    uint64_t session_id = 0;
    Totals line_totals;
    uint64_t n = 0, worker_pid = 0;
    if (!ok || spec.empty() || !parse_u64(pid, &n) || !parse_u64(worker, &worker_pid) ||
        !parse_u64(calls, &line_totals.calls) || !parse_u64(sync, &line_totals.sync) ||
        !parse_u64(refused, &line_totals.refused) || !parse_u64(staged, &line_totals.staged) ||
        !parse_u64(in_place, &line_totals.in_place) || !parse_hex16(id, &session_id) ||
        peer.empty() || (session_id == 0) != (spec == "-")) {
      report.problem = "malformed report line '" + line + "'";
      continue;
    }
    report.sessions.push_back({spec, n, worker_pid, line_totals.calls, line_totals.sync,
                               line_totals.refused, line_totals.staged, line_totals.in_place,
                               session_id, peer});
    Totals &t = report.specs[spec];
    t.sessions += line_totals.calls > 0 ? 1 : 0;
    t.calls += line_totals.calls;
    t.sync += line_totals.sync;
    t.refused += line_totals.refused;
    t.staged += line_totals.staged;
    t.in_place += line_totals.in_place;
  }
  return report;
}

WorkerReport::Totals WorkerReport::of(const std::string &spec) const {
  auto it = specs.find(spec);
  return it == specs.end() ? Totals{} : it->second;
}

std::string not_remoted_reason(const WorkerReport &report, const std::string &spec,
                               uint64_t min_sessions) {
  if (!report.problem.empty())
    return "not remoted: " + report.problem;
  const WorkerReport::Totals t = report.of(spec);
  if (t.sessions >= min_sessions)
    return {};
  return "not remoted: the worker ran calls of spec '" + spec + "' for " +
         std::to_string(t.sessions) + " guest session(s), expected at least " +
         std::to_string(min_sessions) + "; its report:\n" +
         (report.text.empty() ? std::string("(empty)\n") : report.text);
}

RemotedRun run_remoted(const std::string &ava_bin, const std::string &channel,
                       const std::vector<std::string> &argv, const Comparison &cmp) {
  const std::string dir = make_temp_dir();
  const std::string report = dir + "/sessions.report";
  std::vector<std::string> full = {ava_bin, "run", "--channel", channel, "--report", report};
  for (const std::string &a : worker_mode_args())
    full.push_back(a);
  full.insert(full.end(), cmp.run_args.begin(), cmp.run_args.end());
  full.push_back("--");
  full.insert(full.end(), argv.begin(), argv.end());
  RemotedRun r;
  r.proc = run_proc(full, cmp.remoted_env, cmp.timeout_ms);
  r.report = WorkerReport::read(report);
  std::remove(report.c_str());
  ::rmdir(dir.c_str());
  return r;
}

std::vector<std::string> differences(const ProcResult &n, const RemotedRun &r,
                                     const Comparison &cmp) {
  std::vector<std::string> out;
  if (r.proc.timed_out)
    out.push_back("timed out");
  if (r.proc.exit_code != n.exit_code)
    out.push_back("exit " + std::to_string(r.proc.exit_code) + ", native " +
                  std::to_string(n.exit_code) + "; stderr:\n" + r.proc.err);
  const std::string native_out = cmp.normalize ? cmp.normalize(n.out) : n.out;
  const std::string remoted_out = cmp.normalize ? cmp.normalize(r.proc.out) : r.proc.out;
  if (native_out != remoted_out)
    out.push_back("output differs from native:\n" +
                  line_diff(native_out, remoted_out, "native", "remoted") + "stderr:\n" +
                  r.proc.err);
  if (r.proc.err.find("ava:") != std::string::npos)
    out.push_back("unexpected ava message:\n" + r.proc.err);
  const std::string why = not_remoted_reason(r.report, cmp.spec);
  if (!why.empty())
    out.push_back(why);
  return out;
}

void expect_same_as_native(const std::string &ava_bin, const std::vector<std::string> &argv,
                           const Comparison &cmp) {
  const ProcResult n = run_proc(argv, cmp.native_env, cmp.timeout_ms);
  cr_assert_eq(n.exit_code, cmp.native_exit, "native %s exited %d, expected %d:\n%s\n%s",
               argv[0].c_str(), n.exit_code, cmp.native_exit, n.out.c_str(), n.err.c_str());
  for (const std::string &ch : cmp.channels) {
    const RemotedRun r = run_remoted(ava_bin, ch, argv, cmp);
    for (const std::string &d : differences(n, r, cmp))
      cr_expect_fail("%s %s", label_of(ch, argv).c_str(), d.c_str());
  }
}

std::vector<std::string> split_lines(const std::string &text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    lines.push_back(line);
  return lines;
}

std::string line_diff(const std::string &expected, const std::string &got,
                      const char *expected_name, const char *got_name) {
  constexpr size_t kMaxShown = 12;
  const std::vector<std::string> a = split_lines(expected), b = split_lines(got);
  std::ostringstream out;
  out << "--- " << expected_name << " (" << a.size() << " lines)\n+++ " << got_name << " ("
      << b.size() << " lines)\n";
  size_t shown = 0;
  for (size_t i = 0; i < std::max(a.size(), b.size()) && shown < kMaxShown; ++i) {
    const bool has_a = i < a.size(), has_b = i < b.size();
    if (has_a && has_b && a[i] == b[i])
      continue;
    out << "@@ line " << i + 1 << "\n";
    if (has_a)
      out << "-" << a[i] << "\n";
    if (has_b)
      out << "+" << b[i] << "\n";
    ++shown;
  }
  if (shown == kMaxShown)
    out << "... (more differences)\n";
  return out.str();
}

} // namespace remoted
