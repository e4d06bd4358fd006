// SPDX-License-Identifier: MIT
// What a worker tells about each guest it served, one line per session
// appended to a report file (`ava worker --report FILE`, `ava run --report`,
// `ava vmhost --report`): the spec, the guest's pid, the calls it ran (and
// how many of them the guest waited for) and the calls it refused. Tests
// read it to prove a program was really remoted (a program that loaded the
// real library leaves no line) and which of its calls went without waiting;
// operators read it as an accounting log. worker is the pid of the process
// that served the guest: one per guest under the supervisor, one for all
// with --shared.
//
//   session spec=opencl pid=4242 worker=4250 calls=1375 sync=412 refused=0 staged=24 in_place=3
//   id=0x9f3c... peer=-
//
// staged counts the staged transfers whose end went to the guest (reads and
// maps whose bytes the worker sent after their call: non-blocking ones, and
// large blocking ones over sockets; AVA_MSG_DATA). in_place counts transfers
// whose staging was the call's own message (ava_w_transfer_begin_in: large
// non-blocking writes over sockets, their bytes not copied).
// id is the session id of the handshake (0 when it never completed), peer
// the name of the guest's credential (worker/credentials.hpp) or -.
//
// Each line goes out in one O_APPEND write, so the worker processes of one
// `ava vmhost` (one per slot) may share a file without interleaving.
#pragma once

#include <cstdint>
#include <string>

#include "transport/channel.hpp"

namespace ava {

struct SessionReport {
  std::string spec; // empty: the guest never completed HELLO
  uint64_t guest_pid = 0;
  uint64_t worker_pid = 0;
  uint64_t calls = 0;    // calls handed to the spec's dispatch
  uint64_t sync = 0;     // of those, calls the guest waited for (the rest came async)
  uint64_t refused = 0;  // calls refused before they ran (malformed, policed, over a policy)
  uint64_t staged = 0;   // staged transfers ended towards the guest
  uint64_t in_place = 0; // transfers staged in their call's own message
  uint64_t session_id = 0;
  std::string peer; // empty: no credential table
};

std::string format_session_report(const SessionReport &report);
// Appends the report's line to path, creating it (mode 0644) if needed.
Status append_session_report(const std::string &path, const SessionReport &report);

} // namespace ava
