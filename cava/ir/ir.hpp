// SPDX-License-Identifier: MIT
// cava's intermediate representation: plain structs filled by the frontend
// (libclang -> IR), checked and resolved by the validator, read by backends.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cava {

struct Loc {
  std::string file;
  unsigned line = 0;
  unsigned col = 0;
};

// Every annotation of DESIGN.md §3 that appears as a statement.
enum class Ann {
  // values (argument / return value / element / type scopes)
  In,
  Out,
  Buffer,
  Handle,
  Opaque,
  ZerocopyBuffer,
  Callback,
  Userdata,
  LifetimeCall,
  LifetimeCoupled,
  LifetimeManual,
  LifetimeStatic,
  LifetimeOnce, // a callback run at most once: its registration ends when it ran
  Allocates,
  Deallocates,
  Retains,
  HandleValue,
  AllocatesResource,
  DeallocatesResource,
  BufferAllocator,
  DependsOn,
  NoCopy,
  ImplicitArgument,
  Error,
  // function level
  Sync,
  Async,
  Flush,
  DeviceWait,
  Success,
  OrderedBy,
  AsyncShape,
  ConsumesResource,
  DisableNativeCall,
  Unsupported,
  TimeMe,
  ObjectRecord,
  ObjectDependsOn,
  ObjectExplicitStateFunctions,
};

// Maps a marker function name ("__ava_in") to its annotation.
std::optional<Ann> ann_from_marker(const std::string &marker);
// The spelling users write ("ava_in").
const char *ann_name(Ann a);
bool ann_is_function_level(Ann a);

struct Annotation {
  Ann kind = Ann::In;
  std::vector<std::string> args; // source text of each macro argument
  Loc loc;
};

struct Block;

// One item of an annotation block.
struct Stmt {
  enum class Kind { Annotation, If, Element, Field };
  Kind kind = Kind::Annotation;
  Annotation ann;                    // Annotation
  std::string cond;                  // If: the C condition as written
  std::string field;                 // Field: the field name
  std::shared_ptr<Block> then_block; // If, Element, Field
  std::shared_ptr<Block> else_block; // If (may be null)
  Loc loc;
};

struct Block {
  std::vector<Stmt> stmts;
};

struct TypeInfo {
  enum class Kind { Void, Int, Float, Pointer, FunctionPointer, Record, Other };
  Kind kind = Kind::Other;
  std::string spelling;  // as written, e.g. "const demo_obj *"
  std::string canonical; // e.g. "const struct demo_obj_s **"
  bool is_signed = false;
  uint64_t size = 0; // bytes; 0 when unknown (void)
  bool is_bool = false;
  // Pointer / FunctionPointer
  std::shared_ptr<TypeInfo> pointee;
  bool pointee_const = false;
  // FunctionPointer: parameter and result types of the pointee
  std::vector<TypeInfo> fn_params;
  std::shared_ptr<TypeInfo> fn_result;
};

// What a value is on the wire; resolved by the validator.
enum class Role { None, Scalar, Float, Bytes, Handle, Opaque, Buffer, Callback, Userdata };

struct ValueInfo {
  Role role = Role::None;
  uint32_t handle_type = 0; // Handle: type id (1-based)
  bool allocates = false;
  bool deallocates = false; // the call drops one guest reference (release)
  bool retains = false;     // the call adds one guest reference (retain)
  // Buffer
  bool may_in = false;     // some path of the annotations says ava_in
  bool may_out = false;    // some path says ava_out
  bool default_in = false; // no direction given and the pointee is const
  std::string elem_type;   // pointee type without const; "" for void
  uint64_t elem_size = 1;
  // The element type's ava_error (an errcode_ret of an error-typed value):
  // an output of it is set to this when the call did not run.
  std::string elem_error;
  uint32_t elem_handle_type = 0; // elements are handles of this type
  bool elem_allocates = false;
  bool zerocopy = false; // ava_zerocopy_buffer: prefer the channel's shared heap
  // The worker never lets the API or spec code work on guest-writable memory
  // in place: handle arrays (translated in place) and buffers the function's
  // code touches itself (Function::code_uses). See include/ava/spec.h.
  bool worker_private = false;
  // Callback
  std::string callback_decl;
};

struct Param {
  std::string name;
  TypeInfo type;
  Block block; // annotations of ava_argument(name), type rules merged first
  Loc loc;
  ValueInfo info;
};

// How code a function's worker runs uses one of its parameters.
struct CodeUse {
  enum class Kind {
    Other,    // anything else: reads, writes, aliases, helpers (the conservative case)
    NullTest, // compared with 0 / NULL or tested for truth: its memory is not touched
    Argument, // handed as it is (casts aside) to the function callee, as argument arg
  };
  std::string param;
  Kind kind = Kind::Other;
  std::string callee;
  int arg = -1;
};

struct Function {
  std::string name;
  TypeInfo ret;
  std::vector<Param> params;
  bool variadic = false;
  Block block;     // function-level annotations
  Block ret_block; // ava_return_value
  ValueInfo ret_info;
  Loc loc;
  bool is_callback_decl = false;
  bool in_spec = true; // false: declared in an API header only (unsupported stub)
  // Defined by the spec but declared in no API header: a helper that guest
  // replacement code calls; not exported, implemented by its worker body.
  bool internal = false;
  std::string code; // statements of the body that are not annotations
  bool code_has_execute = false;
  // Every use of a parameter in code the worker may run: libclang's
  // references, macro expansions included, outside if (ava_is_guest && ...).
  std::vector<CodeUse> code_uses;
  Loc code_loc;
  // resolved
  uint32_t id = 0;
  bool async = false;
  // `if (cond) { ava_async; }`: async when cond holds, else sync.
  std::optional<std::string> async_if;
  // ava_async_shape(e...): async only after a call with equal values of
  // these C expressions succeeded (the function is then sent as async_if).
  std::vector<std::string> async_shape;
  bool flush = false;
  // ava_device_wait: the guest sleeps for the reply without spinning.
  bool device_wait = false;
  bool unsupported = false;
  bool disable_native_call = false;
  std::optional<std::string> success; // C expression
  std::optional<std::string> error;   // C expression
  uint32_t ret_class = 0;
  int userdata_param = -1; // index of the ava_userdata argument
  int callback_param = -1;
};

struct TypeRule {
  std::string type; // spelling without qualifiers
  Block block;
  Loc loc;
};

struct HandleType {
  std::string name;                // spelling, e.g. "demo_obj"
  std::string destroy_function;    // "" when the spec has none
  std::vector<std::string> values; // ava_handle_value: C expressions passed as they are
};

// ava_export_version(node, functions...): the symbol version of exports.
struct ExportVersion {
  std::string node;
  std::vector<std::string> functions;
  Loc loc;
};

struct CodeRegion {
  std::string text;
  Loc loc;
};

struct Spec {
  std::string source_file; // path as given to cava
  std::string source_name; // path shown in banners (relative when possible)
  std::string name;
  std::string version;
  std::string identifier;
  uint32_t number = 0;
  std::vector<std::string> sonames;
  std::string libs;
  std::string cflags;
  std::string export_qualifier;
  std::vector<std::string> includes; // "#include ..." lines of the spec, in order
  std::vector<CodeRegion> utility;
  std::vector<CodeRegion> replacement;
  std::vector<std::string> replacement_functions; // names defined in replacement regions
  std::map<std::string, CodeRegion> hooks;        // "guestlib_init_prologue" -> code
  std::vector<TypeRule> type_rules;
  Block defaults;
  std::vector<Function> functions; // spec functions, then unsupported header functions
  std::vector<Function> callbacks; // ava_callback_decl functions
  std::vector<HandleType> handle_types;
  std::vector<std::string> ret_classes; // index + 1 = class id
  std::vector<std::string> unimplemented_seen;
  std::vector<ExportVersion> export_versions; // in the order of the spec
  std::vector<std::string> api_functions;     // every function the API headers declare
  Loc loc;
};

} // namespace cava
