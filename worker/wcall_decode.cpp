// SPDX-License-Identifier: MIT
// Decoding a CALL: argument block, handles and buffers. Everything here reads
// guest-controlled bytes, so every offset, length and flag is checked before use.
#include <cstdlib>
#include <cstring>
#include <new>

#include "transport/big_block.hpp"
#include "worker/callback_registry.hpp"
#include "worker/connection.hpp"
#include "worker/out_spare.hpp"
#include "worker/wcall.hpp"

using ava::GuestConnection;

static_assert(sizeof(void *) == sizeof(uint64_t), "handle arrays are translated in place");

ava_wcall::ava_wcall(const std::shared_ptr<GuestConnection> &conn, ava::AsyncErrorSlot *slot,
                     uint8_t *message)
    : connection(conn), async_error(slot), spec(conn->spec()) {
  std::memcpy(&hdr, message, sizeof hdr);
  // The reader checked args_len <= total_len - sizeof(hdr) before queueing.
  args = message + sizeof hdr;
  payload = args + hdr.args_len;
  payload_len = hdr.total_len - sizeof hdr - hdr.args_len;
  sync = (hdr.flags & AVA_F_SYNC) != 0;
  const ava::Channel::Heap h = conn->channel().heap();
  heap = h.base;
  heap_size = h.base != nullptr ? h.size : 0;
}

ava_wcall::~ava_wcall() {
  // The reply was sent (or never will be): nothing refers to the blocks now.
  for (const ArenaBlock &b : arena) {
    if (b.out_used > 0 && out_spare != nullptr)
      out_spare->give(b.ptr, b.bytes, b.out_used);
    else
      ava::big_block_free(b.ptr, b.bytes);
  }
  for (uint64_t key : call_callback_keys)
    ava::CallbackRegistry::instance().remove(key);
}

namespace {

constexpr uint32_t kDirMask = AVA_BUF_IN | AVA_BUF_OUT;

// Memory that lives until the call is done (freed with the ava_wcall).
void *arena_alloc(ava_wcall *w, uint64_t bytes, bool zeroed) {
  void *mem = ava::big_block_alloc(bytes, zeroed);
  if (mem == nullptr)
    return nullptr;
  try {
    w->arena.push_back({mem, bytes});
  } catch (const std::bad_alloc &) {
    ava::big_block_free(mem, bytes);
    return nullptr;
  }
  return mem;
}

// A zeroed OUT-only buffer: the shadow thread's kept block when it is large
// enough (no fault, no zeroing on the way), else a fresh one.
void *out_block_alloc(ava_wcall *w, uint64_t bytes) {
  if (bytes < ava::OutSpare::kMin || w->out_spare == nullptr)
    return arena_alloc(w, bytes, true);
  uint64_t size = bytes;
  void *mem = w->out_spare->take(bytes, &size);
  if (mem == nullptr)
    mem = ava::big_block_alloc(bytes, true);
  if (mem == nullptr)
    return nullptr;
  try {
    w->arena.push_back({mem, size, bytes});
  } catch (const std::bad_alloc &) {
    ava::big_block_free(mem, size);
    return nullptr;
  }
  return mem;
}

ava_buf_desc read_desc(const ava_buf_desc *d) {
  ava_buf_desc copy;
  std::memcpy(&copy, d, sizeof copy);
  return copy;
}

// Checks what holds for every descriptor, whatever the annotations say.
int check_desc(const ava_wcall *w, const ava_buf_desc &d) {
  if ((d.flags & ~(AVA_BUF_ALL | AVA_BUF_HEAP)) != 0 || d.reserved != 0)
    return AVA_E_PROTO;
  if ((d.flags & AVA_BUF_HEAP) != 0) {
    // A range of the shared heap: only on a channel that has one, inside it.
    if ((d.flags & AVA_BUF_PRESENT) == 0 || w->heap == nullptr)
      return AVA_E_PROTO;
    if (d.offset > w->heap_size || d.length > w->heap_size - d.offset)
      return AVA_E_LENGTH;
    return AVA_OK;
  }
  if ((d.flags & AVA_BUF_PRESENT) == 0)
    return d.flags == 0 && d.offset == 0 && d.length == 0 ? AVA_OK : AVA_E_PROTO;
  if ((d.flags & AVA_BUF_IN) == 0 && d.offset != 0)
    return AVA_E_PROTO;
  return AVA_OK;
}

// Locates a present IN buffer in the payload, with its zero guard byte.
int locate_in(ava_wcall *w, const ava_buf_desc &d, void **ptr) {
  if (d.offset > w->payload_len || d.length > w->payload_len - d.offset)
    return AVA_E_LENGTH;
  if (d.length == w->payload_len - d.offset)
    return AVA_E_LENGTH; // no room for the guard byte
  if (d.offset % 8 != 0)
    return AVA_E_PROTO; // payload items are 8-byte aligned
  if (w->payload[d.offset + d.length] != 0)
    return AVA_E_PROTO;
  *ptr = w->payload + d.offset;
  return AVA_OK;
}

bool valid_type(const ava_wcall *w, uint32_t type) {
  return type >= 1 && type <= w->spec->ntypes;
}

// Records a failure for a helper that returns no status; the reply turns into it.
void set_pending(ava_wcall *w, int status) {
  if (w->pending_status == AVA_OK)
    w->pending_status = status;
}

} // namespace

AVA_W_EXPORT int ava_w_args(struct ava_wcall *w, uint32_t size, const void **args) {
  *args = nullptr;
  if (w->hdr.args_len != size)
    return AVA_E_LENGTH;
  *args = w->args;
  return AVA_OK;
}

AVA_W_EXPORT int ava_w_handle(struct ava_wcall *w, uint64_t id, uint32_t type, void **object) {
  *object = nullptr;
  if (id == 0)
    return AVA_OK;
  if (!valid_type(w, type))
    return AVA_E_HANDLE;
  void *found = w->connection->handles().lookup(id, type);
  if (found == nullptr) {
    // Spec code may want to tell "no object" (0) from "no such object".
    if (type < 64)
      w->bad_handle_types |= 1ull << type;
    return AVA_E_HANDLE;
  }
  *object = found;
  return AVA_OK;
}

AVA_W_EXPORT int ava_w_handle_take(struct ava_wcall *w, uint64_t id, uint32_t type, void **object) {
  *object = nullptr;
  if (id == 0 || !valid_type(w, type))
    return 0;
  bool taken = false;
  void *found = w->connection->handles().take(id, type, &taken);
  if (found == nullptr) {
    if (type < 64)
      w->bad_handle_types |= 1ull << type;
    return 0;
  }
  *object = found;
  return taken ? 1 : 0;
}

AVA_W_EXPORT void ava_w_handle_untake(struct ava_wcall *w, uint64_t id) {
  if (id != 0)
    w->connection->handles().untake(id);
}

AVA_W_EXPORT int ava_w_buffer_in(struct ava_wcall *w, const struct ava_buf_desc *d, void **ptr) {
  *ptr = nullptr;
  ava_buf_desc desc = read_desc(d);
  int rc = check_desc(w, desc);
  if (rc != AVA_OK)
    return rc;
  if ((desc.flags & AVA_BUF_IN) == 0)
    return AVA_OK;
  if ((desc.flags & AVA_BUF_HEAP) != 0) {
    *ptr = w->heap + desc.offset;
    return AVA_OK;
  }
  return locate_in(w, desc, ptr);
}

AVA_W_EXPORT int ava_w_buffer_in_private(struct ava_wcall *w, const struct ava_buf_desc *d,
                                         void **ptr) {
  int rc = ava_w_buffer_in(w, d, ptr);
  const ava_buf_desc desc = read_desc(d);
  if (rc != AVA_OK || *ptr == nullptr || (desc.flags & AVA_BUF_HEAP) == 0)
    return rc;
  auto *mem = static_cast<uint8_t *>(arena_alloc(w, desc.length + 1, false));
  if (mem == nullptr) {
    *ptr = nullptr;
    return AVA_E_NOMEM;
  }
  std::memcpy(mem, *ptr, desc.length);
  mem[desc.length] = 0;
  *ptr = mem;
  return AVA_OK;
}

AVA_W_EXPORT int ava_w_buffer_check(struct ava_wcall *w, const struct ava_buf_desc *d,
                                    uint64_t count, uint64_t elem_size, uint32_t dir, void **ptr) {
  *ptr = nullptr;
  ava_buf_desc desc = read_desc(d);
  int rc = check_desc(w, desc);
  if (rc != AVA_OK)
    return rc;
  const bool want_private = (dir & AVA_W_PRIVATE) != 0;
  dir &= ~AVA_W_PRIVATE;
  if ((dir & ~kDirMask) != 0)
    return AVA_E_PROTO;
  if ((desc.flags & AVA_BUF_PRESENT) == 0)
    return AVA_OK;
  if ((desc.flags & kDirMask) != dir)
    return AVA_E_PROTO;
  // Nobody would receive it; a guest that sends one anyway is confused or lying.
  if (!w->sync && (dir & AVA_BUF_OUT) != 0)
    return AVA_E_PROTO;
  uint64_t bytes;
  if (__builtin_mul_overflow(count, elem_size, &bytes) || desc.length != bytes)
    return AVA_E_LENGTH;
  if ((desc.flags & AVA_BUF_HEAP) != 0 && !want_private) {
    // Zero copy: the API works on the shared heap itself.
    *ptr = w->heap + desc.offset;
    return AVA_OK;
  }
  if ((desc.flags & AVA_BUF_HEAP) != 0) {
    // Rewritten or read back by the worker (handle ids <-> objects, spec
    // code): a private copy, so the guest neither sees worker pointers nor
    // changes what the worker reads under its feet. An OUT-only copy starts
    // zeroed (calloc: large ones cost no pass), never with the guest's bytes;
    // a zero byte after it keeps a string read there terminated, as the
    // payload's guard byte does.
    const bool in = (dir & AVA_BUF_IN) != 0;
    auto *mem = static_cast<uint8_t *>(arena_alloc(w, bytes + 1, !in));
    if (mem == nullptr)
      return AVA_E_NOMEM;
    if (in)
      std::memcpy(mem, w->heap + desc.offset, bytes);
    mem[bytes] = 0;
    if ((dir & AVA_BUF_OUT) != 0) {
      try {
        w->private_copies.push_back({mem, desc.offset, bytes});
      } catch (const std::bad_alloc &) {
        return AVA_E_NOMEM;
      }
    }
    *ptr = mem;
    return AVA_OK;
  }
  if ((dir & AVA_BUF_IN) != 0)
    return locate_in(w, desc, ptr);
  // OUT-only (or present without a direction): the worker provides the memory.
  uint64_t limit = w->connection->max_message();
  if (bytes > limit || w->out_alloc > limit - bytes)
    return AVA_E_TOO_BIG;
  void *mem = out_block_alloc(w, bytes);
  if (mem == nullptr)
    return AVA_E_NOMEM;
  w->out_alloc += bytes;
  *ptr = mem;
  return AVA_OK;
}

AVA_W_EXPORT int ava_w_handles_in(struct ava_wcall *w, void *array, uint64_t n, uint32_t type) {
  if (n == 0)
    return AVA_OK;
  if (array == nullptr || reinterpret_cast<uintptr_t>(array) % alignof(uint64_t) != 0)
    return AVA_E_PROTO;
  if (!valid_type(w, type))
    return AVA_E_HANDLE;
  auto *slots = static_cast<uint8_t *>(array);
  // Every element is translated: an unknown id must become NULL, never stay
  // behind as a guest-chosen number the API would take for a pointer.
  int rc = AVA_OK;
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t id;
    std::memcpy(&id, slots + i * 8, sizeof id);
    void *object = nullptr;
    if (id != 0) {
      object = w->connection->handles().lookup(id, type);
      if (object == nullptr)
        rc = AVA_E_HANDLE;
    }
    std::memcpy(slots + i * 8, &object, sizeof object);
  }
  return rc;
}

AVA_W_EXPORT uint64_t ava_w_handle_out(struct ava_wcall *w, void *object, uint32_t type,
                                       int owned) {
  if (object == nullptr)
    return 0;
  if (!valid_type(w, type)) {
    set_pending(w, AVA_E_PROTO);
    return 0;
  }
  int failed = AVA_E_NOMEM;
  try {
    const uint64_t id = w->connection->handles().insert(object, type, owned != 0);
    if (id != 0) {
      if (owned != 0)
        w->connection->resources().bind(id, &w->charge);
      return id;
    }
    failed = AVA_E_POLICY;
    w->connection->log_error("holds its budget of objects (guest.objects): a call that makes "
                             "one more fails");
  } catch (const std::bad_alloc &) {
    // failed stays AVA_E_NOMEM
  }
  // The guest will see the call fail, so nobody could ever free an owned object.
  if (owned != 0 && w->spec->destroy != nullptr)
    w->spec->destroy(type, object);
  set_pending(w, failed);
  return 0;
}

AVA_W_EXPORT int ava_w_handles_out(struct ava_wcall *w, void *array, uint64_t n, uint32_t type,
                                   int owned) {
  if (n == 0)
    return AVA_OK;
  if (array == nullptr || reinterpret_cast<uintptr_t>(array) % alignof(uint64_t) != 0)
    return AVA_E_PROTO;
  if (!valid_type(w, type))
    return AVA_E_PROTO;
  auto *slots = static_cast<uint8_t *>(array);
  for (uint64_t i = 0; i < n; ++i) {
    void *object;
    std::memcpy(&object, slots + i * 8, sizeof object);
    uint64_t id = 0;
    int failed = AVA_OK;
    if (object != nullptr) {
      try {
        id = w->connection->handles().insert(object, type, owned != 0);
        failed = id != 0 ? AVA_OK : AVA_E_POLICY; // 0: the objects budget
      } catch (const std::bad_alloc &) {
        failed = AVA_E_NOMEM;
      }
    }
    if (failed != AVA_OK) {
      // The call fails (generated code goes on to the reply, which then
      // carries the failure): the owned objects not yet registered could
      // never be freed by the guest (those before them go at teardown), and
      // no worker pointer may stay in the array the guest would see.
      for (uint64_t j = i; j < n; ++j) {
        std::memcpy(&object, slots + j * 8, sizeof object);
        if (owned != 0 && object != nullptr && w->spec->destroy != nullptr)
          w->spec->destroy(type, object);
        const uint64_t none = 0;
        std::memcpy(slots + j * 8, &none, sizeof none);
      }
      set_pending(w, failed);
      return failed;
    }
    if (id != 0 && owned != 0)
      w->connection->resources().bind(id, &w->charge);
    std::memcpy(slots + i * 8, &id, sizeof id);
  }
  return AVA_OK;
}

AVA_W_EXPORT void ava_w_handle_release(struct ava_wcall *w, uint64_t id) {
  if (id != 0 && w->connection->handles().release(id)) {
    w->connection->release_coupled(id);
    w->connection->resources().refund(id);
  }
}

AVA_W_EXPORT int ava_w_guest_ids(struct ava_wcall *w, const void *array, uint64_t count,
                                 uint64_t **saved) {
  *saved = nullptr;
  if (count == 0)
    return AVA_OK;
  if (array == nullptr || count > w->connection->max_message() / sizeof(uint64_t))
    return AVA_E_PROTO;
  auto *ids = static_cast<uint64_t *>(arena_alloc(w, count * sizeof(uint64_t), false));
  if (ids == nullptr)
    return AVA_E_NOMEM;
  std::memcpy(ids, array, count * sizeof(uint64_t));
  for (uint64_t i = 0; i < count; ++i)
    if ((ids[i] & AVA_GUEST_ID_MASK) != AVA_GUEST_ID_BIT)
      return AVA_E_HANDLE;
  *saved = ids;
  return AVA_OK;
}

AVA_W_EXPORT int ava_w_adopt_handles(struct ava_wcall *w, const uint64_t *ids, const void *objects,
                                     uint64_t count, uint32_t type) {
  if (ids == nullptr || objects == nullptr || count == 0)
    return AVA_OK;
  if (!valid_type(w, type))
    return AVA_E_PROTO;
  int rc = AVA_OK;
  const auto *slots = static_cast<const uint8_t *>(objects);
  for (uint64_t i = 0; i < count; ++i) {
    void *object;
    std::memcpy(&object, slots + i * sizeof object, sizeof object);
    if (object == nullptr)
      continue;
    bool adopted = false;
    try {
      adopted = w->connection->handles().insert_as(object, type, ids[i]);
    } catch (const std::bad_alloc &) {
      adopted = false;
    }
    if (adopted)
      w->connection->resources().bind(ids[i], &w->charge);
    if (!adopted) {
      if (w->spec->destroy != nullptr)
        w->spec->destroy(type, object);
      rc = AVA_E_HANDLE;
    }
  }
  return rc;
}

AVA_W_EXPORT void ava_w_handle_retain(struct ava_wcall *w, uint64_t id) {
  if (id != 0)
    (void)w->connection->handles().retain(id);
}

AVA_W_EXPORT int ava_w_is_async(const struct ava_wcall *w) {
  return w->sync ? 0 : 1;
}

namespace {
thread_local ava_wcall *tls_current_call = nullptr;
} // namespace

namespace ava {

CurrentCall::CurrentCall(ava_wcall *w) : previous_(tls_current_call) {
  tls_current_call = w;
}
CurrentCall::~CurrentCall() {
  tls_current_call = previous_;
}

ava_wcall *current_call() {
  return tls_current_call;
}

} // namespace ava

AVA_W_EXPORT void *ava_w_current_handle(uint64_t id, uint32_t type) {
  ava_wcall *w = tls_current_call;
  if (w == nullptr || id == 0)
    return nullptr;
  return w->connection->handles().lookup(id, type);
}

AVA_W_EXPORT void ava_w_current_log(const char *message) {
  if (ava_wcall *w = tls_current_call; w != nullptr)
    ava_w_log(w, message);
}

AVA_W_EXPORT int ava_w_current_bad_handle(uint32_t type) {
  ava_wcall *w = tls_current_call;
  return w != nullptr && type < 64 && (w->bad_handle_types & (1ull << type)) != 0 ? 1 : 0;
}

AVA_W_EXPORT uint32_t ava_w_current_handle_held(void *object, uint32_t type) {
  ava_wcall *w = tls_current_call;
  if (w == nullptr || object == nullptr)
    return 0;
  return w->connection->handles().held(object, type);
}

AVA_W_EXPORT uint64_t ava_w_current_handle_id(void *object, uint32_t type) {
  ava_wcall *w = tls_current_call;
  if (w == nullptr || object == nullptr)
    return 0;
  return ava_w_handle_out(w, object, type, 0);
}
