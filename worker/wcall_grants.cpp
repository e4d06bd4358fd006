// SPDX-License-Identifier: MIT
// What the host grants the guest of the call being served, for spec code and
// generated handlers (worker/ava_worker_rt.h): its quotas and what it holds
// of them, reservations whose amount only the worker can compute, and the
// host's settings for the plugin.
#include <cstring>
#include <string>
#include <string_view>

#include "worker/connection.hpp"
#include "worker/wcall.hpp"

namespace {

// The index of resource in the spec's command table, or false.
bool resource_index(const ava_wcall *w, const char *resource, uint32_t *index) {
  const ava_cmd_table *t = w->spec != nullptr ? w->spec->cmds : nullptr;
  if (t == nullptr || resource == nullptr)
    return false;
  for (uint32_t i = 0; i < t->nresource_names; ++i)
    if (t->resource_names[i] != nullptr && std::strcmp(t->resource_names[i], resource) == 0) {
      *index = i;
      return true;
    }
  return false;
}

} // namespace

AVA_W_EXPORT uint64_t ava_w_resource_quota(const char *resource) {
  ava_wcall *w = ava::current_call();
  if (w == nullptr || resource == nullptr)
    return 0;
  return w->connection->resources().quota(resource);
}

AVA_W_EXPORT uint64_t ava_w_resource_used(const char *resource) {
  ava_wcall *w = ava::current_call();
  uint32_t index = 0;
  if (w == nullptr || !resource_index(w, resource, &index))
    return 0;
  return w->connection->resources().used(index);
}

AVA_W_EXPORT void ava_w_resource_view(const char *resource, uint64_t *free, uint64_t *total) {
  const uint64_t quota = ava_w_resource_quota(resource);
  if (quota == 0)
    return;
  const uint64_t used = ava_w_resource_used(resource);
  const uint64_t left = used < quota ? quota - used : 0;
  if (total != nullptr && *total > quota)
    *total = quota;
  if (free != nullptr && *free > left)
    *free = left;
}

AVA_W_EXPORT const char *ava_w_setting(const char *name) {
  ava_wcall *w = ava::current_call();
  if (w == nullptr || name == nullptr)
    return nullptr;
  return w->connection->setting(name);
}

AVA_W_EXPORT int ava_w_at_departure(void (*fn)(void *arg), void *arg) {
  ava_wcall *w = ava::current_call();
  if (w == nullptr || fn == nullptr)
    return AVA_E_PROTO;
  try {
    w->connection->at_departure(fn, arg);
  } catch (const std::bad_alloc &) {
    return AVA_E_NOMEM;
  }
  return AVA_OK;
}

AVA_W_EXPORT int ava_w_at_departure_cancel(void (*fn)(void *arg), void *arg) {
  ava_wcall *w = ava::current_call();
  return w != nullptr && w->connection->cancel_departure(fn, arg) ? 1 : 0;
}

AVA_W_EXPORT int ava_w_reserve(struct ava_wcall *w, uint32_t resource, uint64_t amount) {
  const ava_cmd_table *t = w->spec != nullptr ? w->spec->cmds : nullptr;
  ava::ResourceLedger &ledger = w->connection->resources();
  if (t == nullptr || resource >= t->nresource_names || !ledger.enabled() || amount == 0)
    return AVA_OK;
  // One reservation per call (the command table's, or this one).
  if (w->charge.amount != 0)
    return AVA_E_STATE;
  std::string why;
  if (ledger.reserve(resource, t->resource_names[resource], amount, &w->charge, &why))
    return AVA_OK;
  const uint32_t f = w->hdr.func_id;
  std::string name = w->spec != nullptr ? std::string(w->spec->name) + "." : std::string();
  if (w->spec != nullptr && w->spec->func_names != nullptr && f < w->spec->nfuncs &&
      w->spec->func_names[f] != nullptr)
    name += w->spec->func_names[f];
  else
    name += "#" + std::to_string(f);
  w->connection->log_error(name + ": refused: " + why);
  w->connection->note_refused(AVA_E_POLICY);
  return AVA_E_POLICY;
}
