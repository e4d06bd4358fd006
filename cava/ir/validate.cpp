// SPDX-License-Identifier: MIT
// The validator: checks what annotations mean, resolves every argument and
// return value to a wire role, and reports annotations that no backend
// implements yet (never silently ignoring them).
#include "cava/ir/validate.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include "cava/frontend/clang_util.hpp"

namespace cava {
namespace {

struct Found {
  const Annotation *ann;
  bool conditional;
};

void collect(const Block &b, bool conditional, std::vector<Found> *out,
             std::vector<const Stmt *> *scopes) {
  for (const Stmt &s : b.stmts) {
    switch (s.kind) {
    case Stmt::Kind::Annotation:
      out->push_back({&s.ann, conditional});
      break;
    case Stmt::Kind::If:
      if (s.then_block)
        collect(*s.then_block, true, out, scopes);
      if (s.else_block)
        collect(*s.else_block, true, out, scopes);
      break;
    case Stmt::Kind::Element:
    case Stmt::Kind::Field:
      if (scopes)
        scopes->push_back(&s);
      break;
    }
  }
}

bool is_c_identifier(const std::string &s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0])))
    return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

class Validator {
public:
  Validator(Spec &spec, Diagnostics &diag) : spec_(spec), diag_(diag) {}
  bool run();

private:
  const TypeRule *rule_for(const std::string &type) const;
  uint32_t handle_type_id(const std::string &type);
  bool is_handle_type(const std::string &type) const;
  bool code_touches(const Function &fn, const Param &p) const;
  void check_spec_level();
  void apply_rules_and_defaults(Function &fn);
  void resolve_function(Function &fn);
  void resolve_param(Function &fn, Param &p);
  void resolve_return(Function &fn);
  void resolve_callback_decl(Function &cb);
  void check_implemented(const Annotation &a, bool function_scope);
  void find_destroy_functions();
  void check_export_versions();

  Spec &spec_;
  Diagnostics &diag_;
};

// Whether the code the worker runs for fn reads or rewrites p's memory
// itself, where the guest could change it meanwhile: an epilogue
// translating handles, a helper reading it, a copy out of it that decides
// something while the API (or another copy) reads it again. Handing p as it
// is to API functions (the native call's reads and writes), writing into it
// with memcpy/memmove/memset, one copy out of it in an
// ava_disable_native_call body that hands it to nothing else, and tests
// against NULL leave it in place.
bool Validator::code_touches(const Function &fn, const Param &p) const {
  auto one_of = [](const std::string &name, std::initializer_list<const char *> names) {
    return std::any_of(names.begin(), names.end(), [&](const char *n) { return name == n; });
  };
  int api_uses = 0, copies_out = 0;
  for (const CodeUse &use : fn.code_uses) {
    if (use.param != p.name || use.kind == CodeUse::Kind::NullTest)
      continue;
    if (use.kind == CodeUse::Kind::Other)
      return true;
    if (std::find(spec_.api_functions.begin(), spec_.api_functions.end(), use.callee) !=
        spec_.api_functions.end())
      ++api_uses;
    else if (use.arg == 0 && one_of(use.callee, {"memcpy", "memmove", "memset"}))
      continue;
    else if (use.arg == 1 && one_of(use.callee, {"memcpy", "memmove"}))
      ++copies_out;
    else
      return true;
  }
  // The native call (ava_execute) reads p too.
  return copies_out > 1 || (copies_out == 1 && (api_uses > 0 || !fn.disable_native_call));
}

const TypeRule *Validator::rule_for(const std::string &type) const {
  const std::string t = unqualified(type);
  for (const TypeRule &r : spec_.type_rules) {
    if (r.type == t)
      return &r;
  }
  return nullptr;
}

bool Validator::is_handle_type(const std::string &type) const {
  const TypeRule *r = rule_for(type);
  if (!r)
    return false;
  std::vector<Found> f;
  collect(r->block, false, &f, nullptr);
  return std::any_of(f.begin(), f.end(), [](const Found &x) { return x.ann->kind == Ann::Handle; });
}

uint32_t Validator::handle_type_id(const std::string &type) {
  const std::string t = unqualified(type);
  for (size_t i = 0; i < spec_.handle_types.size(); ++i) {
    if (spec_.handle_types[i].name == t)
      return static_cast<uint32_t>(i + 1);
  }
  HandleType h{t, "", {}};
  if (const TypeRule *r = rule_for(t)) {
    for (const Stmt &s : r->block.stmts)
      if (s.kind == Stmt::Kind::Annotation && s.ann.kind == Ann::HandleValue && !s.ann.args.empty())
        h.values.push_back(s.ann.args[0]);
  }
  spec_.handle_types.push_back(std::move(h));
  return static_cast<uint32_t>(spec_.handle_types.size());
}

void Validator::check_implemented(const Annotation &a, bool function_scope) {
  static const std::set<Ann> kValue = {Ann::In,
                                       Ann::Out,
                                       Ann::Buffer,
                                       Ann::Handle,
                                       Ann::Opaque,
                                       Ann::Callback,
                                       Ann::Userdata,
                                       Ann::LifetimeCall,
                                       Ann::LifetimeCoupled,
                                       Ann::LifetimeManual,
                                       Ann::LifetimeStatic,
                                       Ann::LifetimeOnce,
                                       Ann::Allocates,
                                       Ann::Deallocates,
                                       Ann::Retains,
                                       Ann::Error,
                                       Ann::Success,
                                       Ann::ZerocopyBuffer,
                                       Ann::AllocatesResource,
                                       Ann::DeallocatesResource};
  static const std::set<Ann> kFunction = {
      Ann::Sync,    Ann::Async, Ann::AsyncShape,        Ann::Flush,       Ann::DeviceWait,
      Ann::Success, Ann::Error, Ann::DisableNativeCall, Ann::Unsupported, Ann::ConsumesResource};
  const bool fn_level = ann_is_function_level(a.kind);
  if (function_scope && !fn_level && a.kind != Ann::Error) {
    diag_.error(a.loc,
                std::string(ann_name(a.kind)) +
                    " describes a value: put it inside ava_argument(...) or ava_return_value");
    return;
  }
  if (!function_scope && fn_level && a.kind != Ann::Success) {
    diag_.error(a.loc, std::string(ann_name(a.kind)) +
                           " is a function-level annotation: put it directly in the function body");
    return;
  }
  const auto &ok = function_scope ? kFunction : kValue;
  if (!ok.count(a.kind))
    diag_.error(a.loc,
                std::string(ann_name(a.kind)) + " is not implemented by cava's backends yet");
}

void Validator::check_spec_level() {
  const Loc &loc = spec_.loc;
  if (spec_.name.empty())
    diag_.error(loc, "the spec has no ava_name(\"...\")");
  else if (spec_.name.size() >= 32)
    diag_.error(loc, "ava_name must be shorter than 32 characters");
  if (!is_c_identifier(spec_.identifier))
    diag_.error(loc, "the spec has no ava_identifier(c_identifier)");
  if (spec_.number == 0)
    diag_.error(loc, "the spec has no ava_number(n)");
  if (spec_.sonames.empty())
    diag_.error(loc, "the spec has no ava_soname(\"lib....so.N\")");
  for (const TypeRule &r : spec_.type_rules) {
    std::vector<Found> f;
    std::vector<const Stmt *> scopes;
    collect(r.block, false, &f, &scopes);
    for (const Found &x : f) {
      if (x.conditional)
        diag_.error(x.ann->loc, "annotations in ava_type cannot be conditional");
      else if (x.ann->kind != Ann::Handle && x.ann->kind != Ann::Opaque &&
               x.ann->kind != Ann::Error && x.ann->kind != Ann::Success &&
               x.ann->kind != Ann::HandleValue)
        diag_.error(x.ann->loc,
                    std::string(ann_name(x.ann->kind)) +
                        " in ava_type is not implemented by cava's backends yet "
                        "(ava_type takes ava_handle, ava_opaque, ava_error, ava_success, "
                        "ava_handle_value)");
    }
    if (!scopes.empty())
      diag_.error(r.loc, "ava_element/ava_field in ava_type is not implemented yet");
    if (r.type.find('*') == std::string::npos && is_handle_type(r.type)) {
      // A handle type must be a pointer; checked where it is used.
    }
  }
  std::vector<Found> defaults;
  collect(spec_.defaults, false, &defaults, nullptr);
  for (const Found &x : defaults)
    check_implemented(*x.ann, true);
}

void Validator::apply_rules_and_defaults(Function &fn) {
  // Function-level defaults only fill what the function leaves unsaid.
  std::vector<Found> own;
  collect(fn.block, false, &own, nullptr);
  auto has = [&](Ann k) {
    return std::any_of(own.begin(), own.end(), [&](const Found &x) { return x.ann->kind == k; });
  };
  for (const Stmt &s : spec_.defaults.stmts) {
    if (s.kind != Stmt::Kind::Annotation)
      continue;
    const Ann k = s.ann.kind;
    const bool conflicts =
        (k == Ann::Sync || k == Ann::Async) && (has(Ann::Sync) || has(Ann::Async));
    if (!has(k) && !conflicts)
      fn.block.stmts.push_back(s);
  }
  // Type rules: their value annotations come first in an argument's block.
  for (Param &p : fn.params) {
    if (const TypeRule *r = rule_for(p.type.spelling)) {
      Block merged;
      for (const Stmt &s : r->block.stmts) {
        if (s.kind == Stmt::Kind::Annotation &&
            (s.ann.kind == Ann::Handle || s.ann.kind == Ann::Opaque))
          merged.stmts.push_back(s);
      }
      merged.stmts.insert(merged.stmts.end(), p.block.stmts.begin(), p.block.stmts.end());
      p.block = std::move(merged);
    }
  }
  if (const TypeRule *r = rule_for(fn.ret.spelling)) {
    for (const Stmt &s : r->block.stmts) {
      if (s.kind != Stmt::Kind::Annotation)
        continue;
      if (s.ann.kind == Ann::Handle || s.ann.kind == Ann::Opaque)
        fn.ret_block.stmts.insert(fn.ret_block.stmts.begin(), s);
      else if (s.ann.kind == Ann::Error && !fn.error && !s.ann.args.empty())
        fn.error = s.ann.args[0];
      else if (s.ann.kind == Ann::Success && !fn.success && !s.ann.args.empty())
        fn.success = s.ann.args[0];
    }
  }
}

void Validator::resolve_param(Function &fn, Param &p) {
  std::vector<Found> anns;
  std::vector<const Stmt *> scopes;
  collect(p.block, false, &anns, &scopes);
  ValueInfo &v = p.info;
  auto has = [&](Ann k) {
    return std::any_of(anns.begin(), anns.end(), [&](const Found &x) { return x.ann->kind == k; });
  };
  const std::string where = "argument '" + p.name + "' of " + fn.name;
  static const std::set<Ann> kStatic = {Ann::Handle,   Ann::Opaque,        Ann::Callback,
                                        Ann::Userdata, Ann::Allocates,     Ann::Deallocates,
                                        Ann::Retains,  Ann::ZerocopyBuffer};
  for (const Found &x : anns) {
    check_implemented(*x.ann, false);
    if (x.conditional && kStatic.count(x.ann->kind))
      diag_.error(x.ann->loc, std::string(ann_name(x.ann->kind)) + " cannot be conditional");
    if (x.ann->kind == Ann::Error || x.ann->kind == Ann::Success)
      diag_.error(x.ann->loc,
                  std::string(ann_name(x.ann->kind)) + " belongs to the function, not to " + where);
    if (x.ann->kind == Ann::LifetimeCoupled) {
      const std::string obj = x.ann->args.empty() ? "" : x.ann->args[0];
      auto it = std::find_if(fn.params.begin(), fn.params.end(),
                             [&](const Param &q) { return q.name == obj; });
      if (it == fn.params.end())
        diag_.error(x.ann->loc,
                    "ava_lifetime_coupled takes the name of a handle argument of " + fn.name);
    }
  }
  const TypeInfo &t = p.type;
  if (has(Ann::Userdata)) {
    v.role = Role::Userdata;
    if (t.kind != TypeInfo::Kind::Pointer)
      diag_.error(p.loc, "ava_userdata " + where + " must be a pointer");
  } else if (has(Ann::Callback)) {
    v.role = Role::Callback;
    for (const Found &x : anns) {
      if (x.ann->kind == Ann::Callback && !x.ann->args.empty())
        v.callback_decl = x.ann->args[0];
    }
    if (t.kind != TypeInfo::Kind::FunctionPointer)
      diag_.error(p.loc, "ava_callback " + where + " must be a function pointer");
    auto cb = std::find_if(spec_.callbacks.begin(), spec_.callbacks.end(),
                           [&](const Function &c) { return c.name == v.callback_decl; });
    if (cb == spec_.callbacks.end())
      diag_.error(p.loc, "ava_callback(" + v.callback_decl +
                             "): no ava_callback_decl function of that name");
    else if (cb->params.size() != t.fn_params.size())
      diag_.error(p.loc, "ava_callback(" + v.callback_decl + ") takes " +
                             std::to_string(cb->params.size()) + " arguments but " + where +
                             " takes " + std::to_string(t.fn_params.size()));
  } else if (has(Ann::Handle)) {
    v.role = Role::Handle;
    if (t.kind != TypeInfo::Kind::Pointer)
      diag_.error(p.loc, "ava_handle " + where + " must be a pointer type");
    v.handle_type = handle_type_id(t.spelling);
    v.deallocates = has(Ann::Deallocates);
    v.retains = has(Ann::Retains);
    if (v.retains && v.deallocates)
      diag_.error(p.loc, where + " cannot be both ava_retains and ava_deallocates");
  } else if (has(Ann::Opaque)) {
    v.role = Role::Opaque;
  } else if (t.kind == TypeInfo::Kind::FunctionPointer) {
    diag_.error(p.loc, where + " is a function pointer: it needs ava_callback(decl) or ava_opaque");
  } else if (t.kind == TypeInfo::Kind::Pointer) {
    if (!has(Ann::Buffer)) {
      diag_.error(p.loc, where + " is a pointer without ava_buffer, ava_handle or ava_opaque");
      return;
    }
    v.role = Role::Buffer;
    v.zerocopy = has(Ann::ZerocopyBuffer);
    v.may_in = has(Ann::In);
    v.may_out = has(Ann::Out);
    if (!v.may_in && !v.may_out) {
      if (t.pointee_const)
        v.default_in = v.may_in = true;
      else
        diag_.error(p.loc, "buffer " + where + " needs ava_in, ava_out or both");
    }
    const TypeInfo &pt = *t.pointee;
    if (pt.kind == TypeInfo::Kind::Void) {
      v.elem_size = 1;
    } else {
      v.elem_type = unqualified(pt.spelling);
      v.elem_size = pt.size;
      if (const TypeRule *r = rule_for(v.elem_type))
        for (const Stmt &s : r->block.stmts)
          if (s.kind == Stmt::Kind::Annotation && s.ann.kind == Ann::Error && !s.ann.args.empty())
            v.elem_error = s.ann.args[0];
      if (pt.size == 0)
        diag_.error(p.loc, "buffer " + where + " has elements of unknown size");
    }
    bool elem_opaque = false;
    for (const Stmt *s : scopes) {
      if (s->kind == Stmt::Kind::Field) {
        diag_.error(s->loc, "ava_field is not implemented by cava's backends yet");
        continue;
      }
      std::vector<Found> ea;
      std::vector<const Stmt *> nested;
      collect(*s->then_block, false, &ea, &nested);
      if (!nested.empty())
        diag_.error(s->loc, "nested ava_element is not implemented by cava's backends yet");
      for (const Found &x : ea) {
        if (x.conditional)
          diag_.error(x.ann->loc, "annotations in ava_element cannot be conditional");
        else if (x.ann->kind == Ann::Handle)
          v.elem_handle_type = handle_type_id(pt.spelling);
        else if (x.ann->kind == Ann::Allocates)
          v.elem_allocates = true;
        else if (x.ann->kind == Ann::Opaque)
          elem_opaque = true;
        else
          diag_.error(x.ann->loc, std::string(ann_name(x.ann->kind)) +
                                      " in ava_element is not implemented by cava's backends yet");
      }
    }
    if (!v.elem_handle_type && !elem_opaque && is_handle_type(pt.spelling))
      v.elem_handle_type = handle_type_id(pt.spelling);
    if (v.elem_allocates && !v.elem_handle_type)
      diag_.error(p.loc, "ava_element { ava_allocates; } needs handle elements in " + where);
    if (pt.kind == TypeInfo::Kind::Pointer && !v.elem_handle_type && !elem_opaque)
      diag_.error(
          p.loc,
          "buffer " + where +
              " holds pointers: say ava_element { ava_handle; } or ava_element { ava_opaque; }");
  } else if (t.kind == TypeInfo::Kind::Int) {
    v.role = Role::Scalar;
  } else if (t.kind == TypeInfo::Kind::Float) {
    v.role = Role::Float;
  } else if (t.kind == TypeInfo::Kind::Record && t.size > 0) {
    v.role = Role::Bytes;
  } else {
    diag_.error(p.loc, where + " has type '" + t.spelling + "' which cava cannot marshal");
  }
  if (v.role != Role::Buffer && (has(Ann::Out) || has(Ann::Buffer) || has(Ann::ZerocopyBuffer)))
    diag_.error(p.loc, "ava_out/ava_buffer/ava_zerocopy_buffer need a pointer: " + where +
                           " is not a buffer");
  if (v.role != Role::Handle && has(Ann::Retains))
    diag_.error(p.loc, "ava_retains applies to handle arguments; " + where + " is not one");
  if (v.role != Role::Handle && has(Ann::Deallocates))
    diag_.error(p.loc, "ava_deallocates applies to handle arguments; " + where + " is not one");
  if (has(Ann::Allocates))
    diag_.error(p.loc, "ava_allocates applies to return values and ava_element, not to " + where);
  const bool lifetime = has(Ann::LifetimeCoupled) || has(Ann::LifetimeManual) ||
                        has(Ann::LifetimeStatic) || has(Ann::LifetimeCall) ||
                        has(Ann::LifetimeOnce);
  if (lifetime && v.role != Role::Buffer && v.role != Role::Callback)
    diag_.error(p.loc, "ava_lifetime_* applies to buffers and callbacks; " + where + " is neither");
  if (has(Ann::LifetimeOnce) && v.role != Role::Callback)
    diag_.error(p.loc, "ava_lifetime_once applies to callbacks; " + where + " is not one");
}

void Validator::resolve_return(Function &fn) {
  std::vector<Found> anns;
  std::vector<const Stmt *> scopes;
  collect(fn.ret_block, false, &anns, &scopes);
  auto has = [&](Ann k) {
    return std::any_of(anns.begin(), anns.end(), [&](const Found &x) { return x.ann->kind == k; });
  };
  for (const Found &x : anns) {
    check_implemented(*x.ann, false);
    if (x.conditional)
      diag_.error(x.ann->loc, "annotations of a return value cannot be conditional");
    if (x.ann->kind == Ann::Buffer)
      diag_.error(x.ann->loc, "buffer return values are not implemented by cava's backends yet");
  }
  if (!scopes.empty())
    diag_.error(fn.loc,
                "ava_element in ava_return_value is not implemented by cava's backends yet");
  ValueInfo &v = fn.ret_info;
  const TypeInfo &t = fn.ret;
  switch (t.kind) {
  case TypeInfo::Kind::Void:
    v.role = Role::None;
    break;
  case TypeInfo::Kind::Int:
    v.role = Role::Scalar;
    break;
  case TypeInfo::Kind::Float:
    v.role = Role::Float;
    break;
  case TypeInfo::Kind::Record:
    v.role = Role::Bytes;
    break;
  case TypeInfo::Kind::Pointer:
    if (has(Ann::Handle)) {
      v.role = Role::Handle;
      v.handle_type = handle_type_id(t.spelling);
      v.allocates = has(Ann::Allocates);
    } else if (has(Ann::Opaque)) {
      v.role = Role::Opaque;
    } else if (!fn.unsupported) {
      diag_.error(fn.loc, "the return value of " + fn.name +
                              " is a pointer: say ava_return_value { ava_handle; } or ava_opaque");
    }
    break;
  default:
    if (!fn.unsupported)
      diag_.error(fn.loc, "the return type of " + fn.name + " cannot be marshalled");
  }
  if (has(Ann::Allocates) && v.role != Role::Handle)
    diag_.error(fn.loc, "ava_allocates on the return value of " + fn.name + " needs ava_handle");
}

void Validator::resolve_function(Function &fn) {
  if (!fn.in_spec)
    fn.unsupported = true;
  apply_rules_and_defaults(fn);
  std::vector<Found> anns;
  collect(fn.block, false, &anns, nullptr);
  bool sync = false;
  for (const Found &x : anns) {
    if (fn.in_spec)
      check_implemented(*x.ann, true);
    switch (x.ann->kind) {
    case Ann::Async:
      if (!x.conditional)
        fn.async = true;
      break;
    case Ann::Sync:
      sync = true;
      break;
    case Ann::AsyncShape:
      if (x.conditional)
        diag_.error(x.ann->loc, "ava_async_shape cannot be conditional: the shape is always "
                                "known; put the condition on ava_async");
      else if (!fn.async_shape.empty())
        diag_.error(x.ann->loc, fn.name + " has more than one ava_async_shape");
      else if (x.ann->args.empty() || std::any_of(x.ann->args.begin(), x.ann->args.end(),
                                                  [](const std::string &a) { return a.empty(); }))
        diag_.error(x.ann->loc, "ava_async_shape needs one or more C expressions");
      else
        fn.async_shape = x.ann->args;
      break;
    case Ann::Flush:
      fn.flush = true;
      break;
    case Ann::DeviceWait:
      fn.device_wait = true;
      break;
    case Ann::Unsupported:
      fn.unsupported = true;
      break;
    case Ann::DisableNativeCall:
      fn.disable_native_call = true;
      break;
    case Ann::Success:
      if (!x.ann->args.empty())
        fn.success = x.ann->args[0];
      break;
    case Ann::Error:
      if (!x.ann->args.empty())
        fn.error = x.ann->args[0];
      break;
    default:
      break;
    }
  }
  if (fn.async && sync)
    diag_.error(fn.loc, fn.name + " is both ava_sync and ava_async");
  if (fn.async && fn.device_wait)
    diag_.error(fn.loc, fn.name + " is ava_async: nothing waits for its reply (ava_device_wait)");
  for (const Stmt &s : fn.block.stmts) {
    if (s.kind != Stmt::Kind::If || !s.then_block)
      continue;
    const bool lone_async = s.then_block->stmts.size() == 1 && !s.else_block &&
                            s.then_block->stmts[0].kind == Stmt::Kind::Annotation &&
                            s.then_block->stmts[0].ann.kind == Ann::Async;
    if (!lone_async)
      diag_.error(s.loc, "a function-level if may only hold ava_async: if (cond) { ava_async; }");
    else if (fn.async_if)
      diag_.error(s.loc, fn.name + " has more than one conditional ava_async");
    else
      fn.async_if = s.cond;
  }
  if (fn.async_if && (fn.async || sync))
    diag_.error(fn.loc, fn.name + " is conditionally async and also ava_sync or ava_async");
  if (!fn.async_shape.empty()) {
    if (!fn.async && !fn.async_if)
      diag_.error(fn.loc, fn.name + " has ava_async_shape but is never async: add ava_async");
    // Sync until its shape is known: on the wire it may come either way.
    if (fn.async) {
      fn.async = false;
      fn.async_if = "1";
    }
  }
  if (fn.async_if && fn.ret.kind != TypeInfo::Kind::Void && !fn.success)
    diag_.error(fn.loc, "conditionally async " + fn.name +
                            " needs ava_success(value): it may return before the call is made");
  if (fn.internal && !fn.unsupported && !fn.disable_native_call)
    diag_.error(fn.loc, fn.name +
                            " is declared in no API header, so the worker has no such function: "
                            "say ava_disable_native_call and implement it in its body");
  if (fn.ret.kind == TypeInfo::Kind::Pointer && !fn.error)
    fn.error = "NULL";
  if (fn.ret.kind != TypeInfo::Kind::Void && !fn.error) {
    diag_.error(fn.loc,
                fn.name + " returns " + fn.ret.spelling +
                    " but has no error value: add ava_error(value) to its body or ava_type(" +
                    unqualified(fn.ret.spelling) + ") { ava_error(value); }");
  }
  if (fn.unsupported)
    return;
  if (fn.variadic)
    diag_.error(fn.loc, fn.name + " is variadic and cannot be remoted: mark it ava_unsupported");
  for (Param &p : fn.params) {
    resolve_param(fn, p);
    // A char buffer the API reads is a string, which it reads to its NUL,
    // wherever that is: in the heap the guest could leave it out (or take it
    // away meanwhile), and the API would read past the buffer.
    const bool string_in = p.info.elem_type == "char" && (p.info.may_in || p.info.default_in);
    p.info.worker_private = p.info.role == Role::Buffer &&
                            (p.info.elem_handle_type != 0 || string_in || code_touches(fn, p));
  }
  resolve_return(fn);
  for (size_t i = 0; i < fn.params.size(); ++i) {
    if (fn.params[i].info.role == Role::Userdata) {
      if (fn.userdata_param >= 0)
        diag_.error(fn.params[i].loc, fn.name + " has more than one ava_userdata argument");
      fn.userdata_param = static_cast<int>(i);
    }
    if (fn.params[i].info.role == Role::Callback) {
      if (fn.callback_param >= 0)
        diag_.error(fn.params[i].loc,
                    fn.name + " has more than one callback argument (not implemented yet)");
      fn.callback_param = static_cast<int>(i);
    }
  }
  if ((fn.callback_param >= 0) != (fn.userdata_param >= 0))
    diag_.error(fn.loc,
                fn.name + ": an ava_callback argument needs exactly one ava_userdata argument");
  if (fn.async) {
    if (fn.ret.kind != TypeInfo::Kind::Void && !fn.success)
      diag_.error(fn.loc, "ava_async " + fn.name +
                              " needs ava_success(value): it returns before the call is made");
    // Out arrays of created handles are fine: the guest picks their ids.
    for (const Param &p : fn.params) {
      if (p.info.may_out && !p.info.elem_allocates)
        diag_.error(p.loc, "ava_async " + fn.name + " cannot have the out buffer '" + p.name + "'");
      if (p.info.elem_allocates && p.info.may_in)
        diag_.error(p.loc, "ava_async " + fn.name + ": the handles '" + p.name +
                               "' creates must be ava_out only");
      if (p.info.role == Role::Callback)
        diag_.error(p.loc, "ava_async " + fn.name + " cannot register callbacks");
    }
    if (fn.ret_info.allocates)
      diag_.error(fn.loc, "ava_async " + fn.name + " cannot return an allocated handle");
  }
  if (fn.disable_native_call) {
    if (fn.code.empty())
      diag_.error(fn.loc,
                  "ava_disable_native_call: the body of " + fn.name + " must implement the call");
    if (fn.code_has_execute)
      diag_.error(fn.code_loc,
                  "ava_disable_native_call: " + fn.name + " cannot call ava_execute()");
  } else if (!fn.code.empty() && !fn.code_has_execute) {
    diag_.error(fn.code_loc,
                "the code in " + fn.name +
                    " never calls ava_execute(); add it or say ava_disable_native_call");
  }
  if (fn.success) {
    const std::string t = unqualified(fn.ret.spelling);
    auto it = std::find(spec_.ret_classes.begin(), spec_.ret_classes.end(), t);
    if (it == spec_.ret_classes.end()) {
      spec_.ret_classes.push_back(t);
      fn.ret_class = static_cast<uint32_t>(spec_.ret_classes.size());
    } else {
      fn.ret_class = static_cast<uint32_t>(it - spec_.ret_classes.begin() + 1);
    }
  }
}

void Validator::resolve_callback_decl(Function &cb) {
  std::vector<Found> anns;
  collect(cb.block, false, &anns, nullptr);
  for (const Found &x : anns) {
    if (x.ann->kind == Ann::Async)
      cb.async = true;
    else if (x.ann->kind != Ann::Sync)
      diag_.error(x.ann->loc, std::string(ann_name(x.ann->kind)) +
                                  " is not implemented for callbacks (only ava_sync / ava_async)");
  }
  if (cb.ret.kind != TypeInfo::Kind::Void)
    diag_.error(cb.loc, "callbacks returning a value are not implemented by cava's backends yet");
  if (!cb.code.empty())
    diag_.error(cb.code_loc, "code in an ava_callback_decl is not supported");
  for (Param &p : cb.params) {
    if (const TypeRule *r = rule_for(p.type.spelling)) {
      Block merged;
      for (const Stmt &s : r->block.stmts)
        if (s.kind == Stmt::Kind::Annotation && s.ann.kind == Ann::Handle)
          merged.stmts.push_back(s);
      merged.stmts.insert(merged.stmts.end(), p.block.stmts.begin(), p.block.stmts.end());
      p.block = std::move(merged);
    }
    resolve_param(cb, p);
    if (p.info.role == Role::Buffer && p.info.may_out)
      diag_.error(p.loc, "callback arguments can only be ava_in buffers");
    if (p.info.role == Role::Callback)
      diag_.error(p.loc, "callbacks taking callbacks are not supported");
    if (p.info.role == Role::Userdata)
      cb.userdata_param = static_cast<int>(&p - cb.params.data());
  }
  if (cb.userdata_param < 0)
    diag_.error(cb.loc, "ava_callback_decl " + cb.name + " needs an ava_userdata argument");
}

void Validator::check_export_versions() {
  if (spec_.export_versions.empty())
    return;
  std::map<std::string, std::string> node_of;
  std::set<std::string> exported;
  for (const Function &fn : spec_.functions)
    if (!fn.internal)
      exported.insert(fn.name);
  for (const std::string &name : spec_.replacement_functions)
    exported.insert(name);
  std::set<std::string> nodes;
  for (const ExportVersion &v : spec_.export_versions) {
    if (!nodes.insert(v.node).second)
      diag_.error(v.loc, "version node " + v.node + " is named twice");
    for (const std::string &f : v.functions) {
      if (!exported.count(f))
        diag_.error(v.loc, "ava_export_version(" + v.node + "): " + f +
                               " is not a function the guest library exports");
      else if (!node_of.emplace(f, v.node).second)
        diag_.error(v.loc, f + " is in two version nodes (" + node_of[f] + " and " + v.node + ")");
    }
  }
  for (const std::string &f : exported)
    if (!node_of.count(f))
      diag_.error(spec_.loc, f + " is exported but in no ava_export_version node");
}

void Validator::find_destroy_functions() {
  for (HandleType &h : spec_.handle_types) {
    for (const Function &fn : spec_.functions) {
      if (fn.unsupported || fn.async || fn.params.size() != 1)
        continue;
      const Param &p = fn.params[0];
      if (p.info.role == Role::Handle && p.info.deallocates &&
          spec_.handle_types[p.info.handle_type - 1].name == h.name) {
        h.destroy_function = fn.name;
        break;
      }
    }
  }
}

bool Validator::run() {
  check_spec_level();
  uint32_t id = 1;
  for (Function &cb : spec_.callbacks) {
    cb.id = id++;
    resolve_callback_decl(cb);
  }
  id = 1;
  for (Function &fn : spec_.functions) {
    resolve_function(fn);
    fn.id = id++;
  }
  find_destroy_functions();
  check_export_versions();
  for (const HandleType &h : spec_.handle_types) {
    const bool allocated =
        std::any_of(spec_.functions.begin(), spec_.functions.end(), [&](const Function &f) {
          if (f.ret_info.allocates && spec_.handle_types[f.ret_info.handle_type - 1].name == h.name)
            return true;
          return std::any_of(f.params.begin(), f.params.end(), [&](const Param &p) {
            return p.info.elem_allocates &&
                   spec_.handle_types[p.info.elem_handle_type - 1].name == h.name;
          });
        });
    if (allocated && h.destroy_function.empty())
      diag_.error(spec_.loc,
                  "handles of type " + h.name +
                      " are allocated but no function deallocates them (a one-argument "
                      "function with ava_deallocates): guests that exit would leak them");
  }
  return !diag_.has_errors();
}

} // namespace

bool validate_spec(Spec &spec, Diagnostics &diag) {
  Validator v(spec, diag);
  return v.run();
}

} // namespace cava
