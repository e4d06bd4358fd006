// SPDX-License-Identifier: MIT
// Shared pieces of the backends: an emitter that knows its line number (for
// #line directives back to the spec), names of generated symbols, and the
// translation of annotation blocks into C statements.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cava/ir/ir.hpp"

namespace cava {

class Emitter {
public:
  explicit Emitter(std::string file_name) : file_name_(std::move(file_name)) {}
  // Appends text (may hold several lines); a newline is added.
  void line(const std::string &text = "");
  // Copies spec code with #line directives so compiler errors point at the spec.
  void spec_code(const std::string &code, const Loc &loc);
  const std::string &text() const { return text_; }

private:
  std::string file_name_;
  std::string text_;
  unsigned lines_ = 0;
};

std::string upper(const std::string &s);
// "ava_demo"
std::string prefix(const Spec &spec);
std::string fn_id_macro(const Spec &spec, const Function &fn);
std::string cb_id_macro(const Spec &spec, const Function &cb);
std::string cb_id_macro(const Spec &spec, const std::string &cb_name);
std::string type_id_macro(const Spec &spec, uint32_t type_id);
std::string call_struct(const Spec &spec, const Function &fn);
std::string reply_struct(const Spec &spec, const Function &fn);
std::string cb_struct(const Spec &spec, const Function &cb);
// The C condition on ava_ret under which the API refused the call, so that
// the callbacks it registered will never run: not the spec's success value,
// or a NULL handle from a function that returns one; "" when neither tells.
std::string refused_condition(const Function &fn);
std::string wire_header_name(const Spec &spec);

// The spec's utility code (ava_begin_utility ... ava_end_utility), which
// every side compiles; `where` completes the comment above it.
void emit_utility_code(Emitter &out, const Spec &spec, const std::string &where);
// A spec hook (e.g. "guestlib_init_prologue") as `static void NAME(void)`,
// when the spec has it.
void emit_hook(Emitter &out, const Spec &spec, const std::string &hook, const std::string &name);

// "int x", "void (*fn)(int)"
std::string declarator(const TypeInfo &t, const std::string &name);
// "demo_obj obj, uint64_t size" (or "void")
std::string param_list(const Function &fn);
// "obj, size"
std::string arg_list(const Function &fn);
// The prototype "T name(params)".
std::string prototype(const Function &fn, const std::string &name);
// Element size expression of a buffer: "sizeof(T)" or "1".
std::string elem_size_expr(const Param &p);
uint64_t round8(uint64_t n);

// Emits the runtime evaluation of an argument's annotations: assignments to
// ava_dir_<p>, ava_count_<p>, ava_life_<p>, ava_coupled_<p>.
// coupled_id maps a handle argument name to its wire id expression.
void emit_annotation_eval(Emitter &out, const Block &block, const Param &p,
                          const std::string &indent,
                          const std::function<std::string(const std::string &)> &coupled_id);
bool block_has_lifetime(const Block &block);

// Whether text names the C identifier name (not as part of a longer one).
bool names_identifier(const std::string &text, const std::string &name);

// Callback decoders. A buffer argument whose ava_buffer size is computed from
// the other arguments (pfn_notify's private_info, sized by cb) must arrive
// with exactly that many bytes: the program reads that many. One whose size
// names the buffer itself (strlen(s) + 1) is bounded by the payload's guard
// byte instead.
bool callback_buffer_sized_by_others(const Param &p);
// Emits that check for p after every argument is decoded: evaluates the
// annotations into block-local ava_dir_/ava_count_ variables of types u32 and
// u64 and runs fail unless the descriptor's length is count * element size.
// An absent buffer (NULL) passes.
void emit_callback_size_check(Emitter &out, const Param &p, const std::string &indent,
                              const std::string &u32, const std::string &u64,
                              const std::string &fail);

// What differs between the runtimes remoted stubs are written against:
// shim/ava_shim.h (guest libraries) and include/ava/kcall.h (kernel modules).
struct StubDialect {
  std::string call_type;       // "struct ava_call"
  std::string u32, u64, s64;   // "uint32_t", "uint64_t", "int64_t"
  std::string call_prefix;     // "ava_call": ava_call_begin, ava_call_invoke, ...
  std::string context;         // first argument of begin and handle_released
  std::string new_handle_ids;  // fills guest-chosen ids for async creations
  std::string handle_released; // drops callbacks coupled to a released handle
  // Ends the registrations of a call the API refused (its callbacks never
  // run); empty: the runtime keeps them until the guest goes.
  std::string callbacks_unused;
  std::string async_error_test; // appended to the take_async_error call ("" or " > 0")
  // ava_async_shape: the runtime's "seen this shape succeed" test and its
  // record of a success; empty: the runtime learns no shapes (always sync).
  std::string shape_known, shape_learn;
  bool zerocopy = false;      // the runtime has AVA_CALL_ZEROCOPY
  bool device_wait = false;   // the runtime has AVA_CALL_DEVICE_WAIT
  bool callback_decl = false; // registering a callback names its declaration id
  std::function<std::string(const Function &)> error_return;
  std::string fn(const char *op) const { return call_prefix + "_" + op; }
};

// The body ({ ... }) of a stub that marshals fn and sends it.
void emit_remote_body(Emitter &out, const Spec &spec, const Function &fn, const StubDialect &d);

// A C integer literal ("64", "0x40u", "1ULL"); nullopt otherwise.
std::optional<uint64_t> int_literal(std::string s);
// Every annotation of kind in block, also inside its ifs.
void collect(const Block &block, Ann kind, std::vector<const Annotation *> *out);
// s without its enclosing double quotes, if it has them.
std::string unquote(const std::string &s);
// The command table's macro of a resource: AVA_<ID>_RES_<NAME>.
std::string res_macro(const Spec &spec, const std::string &name);
// Whether a resource amount is just one scalar argument of fn (*param: its name).
bool amount_is_scalar_arg(const Function &fn, const std::string &amount, std::string *param);
// The annotations of kind (e.g. Ann::AllocatesResource) on fn's values, in
// command-table order: the return value's, then each argument's.
std::vector<const Annotation *> resource_annotations(const Function &fn, Ann kind);

// 64-bit FNV-1a, the spec layout hash.
uint64_t fnv1a(const std::string &text);

} // namespace cava
