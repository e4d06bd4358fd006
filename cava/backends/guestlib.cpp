// SPDX-License-Identifier: MIT
// Backend: the guest library. One exported stub per API function marshals
// the call through the shim runtime (shim/ava_shim.h); unsupported
// functions report themselves; callbacks from the worker are decoded by one
// dispatch function.
#include <sstream>

#include "cava/backends/backends.hpp"
#include "cava/backends/common.hpp"

namespace cava {
namespace {

class GuestGen {
public:
  GuestGen(const Spec &spec, const std::string &file_name)
      : spec_(spec), p_(prefix(spec)), out_(file_name) {}
  std::string run();

private:
  void preamble();
  void stub(const Function &fn);
  void remote_body(const Function &fn);
  void unsupported_stub(const Function &fn);
  void callback_dispatch();
  void spec_descriptor();
  std::string spec_ref() const { return "&" + p_ + "_guest_spec"; }
  // The spec's own helpers stay inside the library (hidden by default).
  static std::string export_kw(const Function &fn) { return fn.internal ? "" : "AVA_EXPORT "; }
  std::string error_return(const Function &fn) const {
    return fn.ret.kind == TypeInfo::Kind::Void
               ? "return;"
               : "return (" + fn.ret.spelling + ")(" + *fn.error + ");";
  }

  const Spec &spec_;
  std::string p_;
  Emitter out_;
};

void GuestGen::preamble() {
  out_.line(banner(spec_));
  out_.line("/*");
  out_.line(" * Guest library of spec \"" + spec_.name + "\": answers to " +
            (spec_.sonames.empty() ? std::string("?") : spec_.sonames[0]) +
            " and forwards each call to an ava worker.");
  out_.line(" */");
  out_.line("#include <stddef.h>");
  out_.line("#include <stdint.h>");
  out_.line("#include <string.h>");
  out_.line();
  for (const std::string &inc : spec_.includes)
    out_.line(inc);
  out_.line();
  out_.line("#include \"shim/ava_shim.h\"");
  out_.line("#include \"" + wire_header_name(spec_) + "\"");
  out_.line();
  out_.line("#define AVA_EXPORT __attribute__((visibility(\"default\")))");
  out_.line("#define ava_is_guest 1");
  out_.line("#define ava_is_worker 0");
  out_.line("/* In the guest a handle is its id. */");
  out_.line("#define ava_handle_object(T, id) ((T)(uintptr_t)(id))");
  out_.line("#define ava_handle_id(T, object) ((uint64_t)(uintptr_t)(object))");
  out_.line("#define ava_handle_invalid(T) 0");
  out_.line("#define ava_handle_held(T, object) 0u");
  out_.line();
  out_.line("static const struct ava_guest_spec " + p_ + "_guest_spec;");
  out_.line();
  emit_utility_code(out_, spec_, "compiled into guest and worker");
  for (const char *h : {"guestlib_init_prologue", "guestlib_init_epilogue",
                        "guestlib_fini_prologue", "guestlib_fini_epilogue"})
    emit_hook(out_, spec_, h, p_ + "_" + h);
  bool any_internal = false;
  for (const Function &fn : spec_.functions) {
    if (!fn.internal || fn.unsupported)
      continue;
    if (!any_internal)
      out_.line("/* The spec's own helpers (remote calls, not exported), for replacement code. */");
    any_internal = true;
    out_.line(prototype(fn, fn.name) + ";");
  }
  if (any_internal)
    out_.line();
  if (!spec_.replacement.empty()) {
    out_.line("/* Replacement code of the spec: these functions run in the guest only. */");
    out_.line("#pragma GCC visibility push(default)");
    for (const CodeRegion &r : spec_.replacement)
      out_.spec_code(r.text, r.loc);
    out_.line("#pragma GCC visibility pop");
    out_.line();
  }
}

void GuestGen::unsupported_stub(const Function &fn) {
  out_.line(export_kw(fn) + prototype(fn, fn.name));
  out_.line("{");
  for (const Param &p : fn.params)
    out_.line("\t(void)" + p.name + ";");
  out_.line("\tava_guest_unsupported(" + spec_ref() + ", \"" + fn.name + "\");");
  if (fn.ret.kind != TypeInfo::Kind::Void)
    out_.line("\t" + error_return(fn));
  out_.line("}");
  out_.line();
}

void GuestGen::remote_body(const Function &fn) {
  StubDialect d;
  d.call_type = "struct ava_call";
  d.u32 = "uint32_t";
  d.u64 = "uint64_t";
  d.s64 = "int64_t";
  d.call_prefix = "ava_call";
  d.context = spec_ref();
  // Sent without waiting, the call cannot return ids: the guest picks them.
  d.new_handle_ids = "ava_guest_new_handle_ids";
  d.handle_released = "ava_guest_handle_released";
  d.callbacks_unused = "ava_call_callbacks_unused";
  d.shape_known = "ava_guest_shape_known";
  d.shape_learn = "ava_guest_shape_learn";
  d.zerocopy = true;
  d.device_wait = true;
  d.callback_decl = true;
  d.error_return = [this](const Function &f) { return error_return(f); };
  emit_remote_body(out_, spec_, fn, d);
}

void GuestGen::stub(const Function &fn) {
  if (fn.unsupported) {
    unsupported_stub(fn);
    return;
  }
  const bool guest_code = !fn.code.empty() && !fn.disable_native_call;
  if (!guest_code) {
    out_.line(export_kw(fn) + prototype(fn, fn.name));
    remote_body(fn);
    return;
  }
  // The spec's code runs around the remote call: ava_execute() is that call.
  const std::string remote = p_ + "_remote_" + fn.name;
  out_.line("static " + prototype(fn, remote));
  remote_body(fn);
  out_.line(export_kw(fn) + prototype(fn, fn.name));
  out_.line("{");
  out_.line("#define ava_execute() " + remote + "(" + arg_list(fn) + ")");
  out_.spec_code(fn.code, fn.code_loc);
  out_.line("#undef ava_execute");
  out_.line("}");
  out_.line();
}

void GuestGen::callback_dispatch() {
  out_.line("static int " + p_ +
            "_guest_callback(uint32_t ava_decl_id, void (*ava_fn)(void), void "
            "*ava_userdata,");
  out_.line("\t\t\t\tconst void *ava_args, uint64_t ava_args_len, const uint8_t *ava_payload,");
  out_.line("\t\t\t\tuint64_t ava_payload_len)");
  out_.line("{");
  if (spec_.callbacks.empty()) {
    out_.line("\t(void)ava_decl_id;\n\t(void)ava_fn;\n\t(void)ava_userdata;\n\t(void)ava_args;");
    out_.line("\t(void)ava_args_len;\n\t(void)ava_payload;\n\t(void)ava_payload_len;");
    out_.line("\treturn -1;");
    out_.line("}");
    out_.line();
    return;
  }
  // Callbacks without buffers never look at the payload.
  out_.line("\t(void)ava_payload;\n\t(void)ava_payload_len;");
  out_.line("\tswitch (ava_decl_id) {");
  for (const Function &cb : spec_.callbacks) {
    out_.line("\tcase " + cb_id_macro(spec_, cb) + ": {");
    out_.line("\t\tconst " + cb_struct(spec_, cb) + " *ava_a = ava_args;");
    for (const Param &p : cb.params)
      out_.line("\t\t" + declarator(p.type, p.name) + ";");
    out_.line();
    out_.line("\t\tif (ava_args_len != sizeof(*ava_a))");
    out_.line("\t\t\treturn -1;");
    std::string call_types;
    for (const Param &p : cb.params) {
      const std::string f = "ava_a->" + p.name;
      call_types += (call_types.empty() ? "" : ", ") + p.type.spelling;
      switch (p.info.role) {
      case Role::Scalar:
        out_.line("\t\t" + p.name + " = (" + p.type.spelling + ")" + f + ";");
        break;
      case Role::Float:
      case Role::Bytes:
        out_.line("\t\tmemcpy(&" + p.name + ", " + (p.info.role == Role::Float ? "&" : "") + f +
                  ", sizeof(" + p.name + "));");
        break;
      case Role::Handle:
      case Role::Opaque:
        out_.line("\t\t" + p.name + " = (" + p.type.spelling + ")(uintptr_t)" + f + ";");
        break;
      case Role::Userdata:
        out_.line("\t\t" + p.name + " = ava_userdata;");
        break;
      case Role::Buffer:
        out_.line("\t\tif (ava_callback_buffer(&" + f +
                  ", ava_payload, ava_payload_len, (const void "
                  "**)&" +
                  p.name + ") != 0)");
        out_.line("\t\t\treturn -1;");
        break;
      default:
        break;
      }
    }
    // A lying worker must not make the program read past what arrived.
    for (const Param &p : cb.params)
      if (callback_buffer_sized_by_others(p))
        emit_callback_size_check(out_, p, "\t\t", "uint32_t", "uint64_t", "return AVA_E_LENGTH;");
    out_.line("\t\t((void (*)(" + call_types + "))ava_fn)(" + arg_list(cb) + ");");
    out_.line("\t\treturn 0;");
    out_.line("\t}");
  }
  out_.line("\tdefault:");
  out_.line("\t\t(void)ava_fn;");
  out_.line("\t\treturn -1;");
  out_.line("\t}");
  out_.line("}");
  out_.line();
}

void GuestGen::spec_descriptor() {
  out_.line("static const char *const " + p_ + "_func_names[] = {");
  out_.line("\tNULL,");
  for (const Function &fn : spec_.functions)
    out_.line("\t\"" + fn.name + "\",");
  out_.line("};");
  out_.line();
  const std::string up = upper(spec_.identifier);
  out_.line("static const struct ava_guest_spec " + p_ + "_guest_spec = {");
  out_.line("\t.name = AVA_" + up + "_SPEC_NAME,");
  out_.line("\t.id = AVA_" + up + "_SPEC_ID,");
  out_.line("\t.hash = AVA_" + up + "_SPEC_HASH,");
  out_.line("\t.nfuncs = AVA_" + up + "_NFUNCS,");
  out_.line("\t.func_names = " + p_ + "_func_names,");
  out_.line("\t.callback_dispatch = " + p_ + "_guest_callback,");
  for (const char *h : {"init_prologue", "init_epilogue", "fini_prologue", "fini_epilogue"}) {
    const bool present = spec_.hooks.count(std::string("guestlib_") + h) != 0;
    out_.line(std::string("\t.") + h + " = " + (present ? p_ + "_guestlib_" + h : "NULL") + ",");
  }
  out_.line("};");
  out_.line();
  out_.line("/* Memory in the channel's shared heap: buffers there reach the worker uncopied. */");
  out_.line("AVA_EXPORT void *ava_zerocopy_alloc(uint64_t size)");
  out_.line("{");
  out_.line("\treturn ava_guest_zerocopy_alloc(" + spec_ref() + ", size);");
  out_.line("}");
  out_.line();
  out_.line("AVA_EXPORT void ava_zerocopy_free(void *ptr)");
  out_.line("{");
  out_.line("\tava_guest_zerocopy_free(" + spec_ref() + ", ptr);");
  out_.line("}");
  out_.line();
  out_.line("/* Closes the channel when the program exits or unloads the library. */");
  out_.line("__attribute__((destructor)) static void " + p_ + "_guest_fini(void)");
  out_.line("{");
  out_.line("\tava_guest_shutdown(" + spec_ref() + ");");
  out_.line("}");
}

std::string GuestGen::run() {
  preamble();
  callback_dispatch();
  for (const Function &fn : spec_.functions)
    stub(fn);
  spec_descriptor();
  return out_.text();
}

} // namespace

std::string generate_guestlib(const Spec &spec, const std::string &file_name) {
  GuestGen gen(spec, file_name);
  return gen.run();
}

std::string generate_version_script(const Spec &spec) {
  std::ostringstream out;
  out << banner(spec, "/*", " */") << "\n";
  if (spec.export_versions.empty()) {
    out << "{\n\tglobal:\n";
    for (const Function &fn : spec.functions)
      if (!fn.internal)
        out << "\t\t" << fn.name << ";\n";
    for (const std::string &name : spec.replacement_functions)
      out << "\t\t" << name << ";\n";
    out << "\t\tava_zerocopy_alloc;\n\t\tava_zerocopy_free;\n";
    out << "\tlocal:\n\t\t*;\n};\n";
    return out.str();
  }
  // The real library's version nodes, each inheriting the previous one; ava's
  // own exports go into the first, which also hides everything else.
  std::string previous;
  for (size_t i = 0; i < spec.export_versions.size(); ++i) {
    const ExportVersion &v = spec.export_versions[i];
    out << v.node << " {\n\tglobal:\n";
    for (const std::string &f : v.functions)
      out << "\t\t" << f << ";\n";
    if (i == 0) {
      out << "\t\tava_zerocopy_alloc;\n\t\tava_zerocopy_free;\n";
      out << "\tlocal:\n\t\t*;\n";
    }
    out << "}" << (previous.empty() ? "" : " " + previous) << ";\n";
    previous = v.node;
  }
  return out.str();
}

} // namespace cava
