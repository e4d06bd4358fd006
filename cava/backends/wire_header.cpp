// SPDX-License-Identifier: MIT
// Backend: the C wire header. Every field is 8 bytes (or a buffer
// descriptor, or a byte array rounded up to 8), so the structs have no
// implicit padding and the same layout in the kernel and in user space.
#include <sstream>

#include "cava/backends/backends.hpp"
#include "cava/backends/common.hpp"

namespace cava {
namespace {

// Appends one field; returns its size on the wire.
uint64_t field(Emitter &out, const std::string &name, const TypeInfo &t, Role role,
               const std::string &note) {
  switch (role) {
  case Role::Scalar:
    out.line(std::string("\t") + (t.is_signed ? "ava_s64 " : "ava_u64 ") + name + "; /* " +
             t.spelling + note + " */");
    return 8;
  case Role::Float:
    out.line("\tava_u64 " + name + "; /* bits of " + t.spelling + note + " */");
    return 8;
  case Role::Bytes:
    out.line("\tava_u8 " + name + "[" + std::to_string(round8(t.size)) + "]; /* " + t.spelling +
             note + " */");
    return round8(t.size);
  case Role::Handle:
    out.line("\tava_u64 " + name + "; /* handle " + t.spelling + note + " */");
    return 8;
  case Role::Opaque:
    out.line("\tava_u64 " + name + "; /* opaque " + t.spelling + note + " */");
    return 8;
  case Role::Callback:
    out.line("\tava_u64 " + name + "; /* callback registration id */");
    return 8;
  case Role::Userdata:
    out.line("\tava_u64 " + name +
             "; /* 1 if the guest passed user data (it stays in the guest) */");
    return 8;
  case Role::Buffer:
    out.line("\tstruct ava_buf_desc " + name + "; /* " + t.spelling + note + " */");
    return 24;
  case Role::None:
    break;
  }
  return 0;
}

void finish_struct(Emitter &out, const std::string &name, uint64_t size) {
  if (size == 0) {
    out.line("\tava_u64 ava_unused; /* C has no empty structs */");
    size = 8;
  }
  out.line("};");
  out.line("AVA_STATIC_ASSERT(sizeof(" + name + ") == " + std::to_string(size) + ", \"" + name +
           "\");");
  out.line();
}

std::string dir_note(const Param &p) {
  if (p.info.role != Role::Buffer)
    return "";
  std::string d = p.info.may_in && p.info.may_out ? "in/out" : p.info.may_in ? "in" : "out";
  if (p.info.elem_handle_type)
    d += ", handle elements";
  return ", " + d;
}

} // namespace

std::string generate_wire_header(const Spec &spec, uint64_t *hash) {
  const std::string up = upper(spec.identifier);
  Emitter body("");
  body.line("#define AVA_" + up + "_SPEC_NAME \"" + spec.name + "\"");
  body.line("#define AVA_" + up + "_SPEC_ID " + std::to_string(spec.number) + "u");
  body.line("#define AVA_" + up + "_NFUNCS " + std::to_string(spec.functions.size() + 1) + "u");
  body.line("#define AVA_" + up + "_NCALLBACKS " + std::to_string(spec.callbacks.size() + 1) + "u");
  body.line();
  body.line("/* Function ids (0 is never used). */");
  for (const Function &fn : spec.functions)
    body.line("#define " + fn_id_macro(spec, fn) + " " + std::to_string(fn.id) + "u" +
              (fn.unsupported ? " /* unsupported: never sent */" : ""));
  body.line();
  if (!spec.callbacks.empty()) {
    body.line("/* Callback declaration ids. */");
    for (const Function &cb : spec.callbacks)
      body.line("#define " + cb_id_macro(spec, cb) + " " + std::to_string(cb.id) + "u");
    body.line();
  }
  if (!spec.handle_types.empty()) {
    body.line("/* Handle types (0 is never used). */");
    for (size_t i = 0; i < spec.handle_types.size(); ++i)
      body.line("#define " + type_id_macro(spec, static_cast<uint32_t>(i + 1)) + " " +
                std::to_string(i + 1) + "u /* " + spec.handle_types[i].name + " */");
    body.line();
  }
  if (!spec.ret_classes.empty()) {
    body.line("/* Return classes: async errors surface at sync calls of the same class. */");
    for (size_t i = 0; i < spec.ret_classes.size(); ++i)
      body.line("/*   " + std::to_string(i + 1) + ": " + spec.ret_classes[i] + " */");
    body.line();
  }
  for (const Function &fn : spec.functions) {
    if (fn.unsupported)
      continue;
    body.line("/* " + fn.name + (fn.async ? " (async)" : "") + " */");
    const std::string cs = call_struct(spec, fn);
    body.line(cs + " {");
    uint64_t size = 0;
    for (const Param &p : fn.params)
      size += field(body, p.name, p.type, p.info.role, dir_note(p));
    finish_struct(body, cs, size);
    if (fn.async)
      continue;
    const std::string rs = reply_struct(spec, fn);
    body.line(rs + " {");
    size = 0;
    if (fn.ret_info.role != Role::None)
      size += field(body, "ret", fn.ret, fn.ret_info.role, ", return value");
    for (const Param &p : fn.params) {
      if (p.info.role == Role::Buffer && p.info.may_out)
        size += field(body, p.name, p.type, Role::Buffer, dir_note(p));
    }
    finish_struct(body, rs, size);
  }
  for (const Function &cb : spec.callbacks) {
    body.line("/* callback " + cb.name + (cb.async ? " (async)" : "") + " */");
    const std::string cs = cb_struct(spec, cb);
    body.line(cs + " {");
    uint64_t size = 0;
    for (const Param &p : cb.params)
      size += field(body, p.name, p.type, p.info.role, dir_note(p));
    finish_struct(body, cs, size);
  }
  *hash = fnv1a(body.text());

  std::ostringstream out;
  out << banner(spec) << "\n";
  out << "/*\n * Wire layout of spec \"" << spec.name
      << "\": the argument block of each CALL and REPLY\n"
         " * (see include/ava/wire.h). Every field is 8 bytes or a buffer descriptor,\n"
         " * so there is no implicit padding; the sizes are asserted below.\n */\n";
  out << "#ifndef AVA_" << up << "_WIRE_H\n#define AVA_" << up << "_WIRE_H\n\n";
  out << "#include \"ava/wire.h\"\n\n";
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%016llxull", static_cast<unsigned long long>(*hash));
  out << "/* FNV-1a of the layout below: guest and worker must agree. */\n";
  out << "#define AVA_" << up << "_SPEC_HASH " << hex << "\n";
  out << body.text();
  out << "#endif /* AVA_" << up << "_WIRE_H */\n";
  return out.str();
}

std::string banner(const Spec &spec, const char *open, const char *close) {
  return std::string(open) + " generated by cava from " + spec.source_name + "; do not edit" +
         close;
}

} // namespace cava
