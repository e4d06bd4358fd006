// SPDX-License-Identifier: MIT
// Backend: kernel-mode stubs. For a spec it writes the module ava_<id>.ko:
// a header of prefixed prototypes for other modules (<id>_kern.h), the stubs
// that marshal each call through ava.ko's kcall runtime (include/ava/kcall.h)
// on a connection the module opens at init (<id>_kern.c), and its Kbuild.
// The wire format is the user-space one; what cannot run in a kernel (float,
// variadic, guest-only replacement code) is left out and listed.
#include <algorithm>
#include <cctype>
#include <set>

#include "cava/backends/backends.hpp"
#include "cava/backends/common.hpp"
#include "cava/backends/wrap.hpp"

namespace cava {
namespace {

bool type_has_float(const TypeInfo &t) {
  if (t.kind == TypeInfo::Kind::Float)
    return true;
  if (t.pointee && type_has_float(*t.pointee))
    return true;
  if (t.fn_result && type_has_float(*t.fn_result))
    return true;
  return std::any_of(t.fn_params.begin(), t.fn_params.end(), type_has_float);
}

bool fn_has_float(const Function &fn) {
  if (type_has_float(fn.ret))
    return true;
  return std::any_of(fn.params.begin(), fn.params.end(),
                     [](const Param &p) { return type_has_float(p.type); });
}

bool is_ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// Names that the spec's utility code typedefs: no API header declares them,
// so kernel callers could not name them.
std::set<std::string> utility_typedefs(const Spec &spec) {
  std::set<std::string> names;
  for (const CodeRegion &r : spec.utility) {
    const std::string &t = r.text;
    for (size_t at = t.find("typedef"); at != std::string::npos; at = t.find("typedef", at + 7)) {
      if (at > 0 && is_ident_char(t[at - 1]))
        continue;
      const size_t end = t.find(';', at);
      if (end == std::string::npos)
        break;
      std::string decl = t.substr(at, end - at);
      const size_t fp = decl.find("(*");
      if (fp != std::string::npos)
        decl = decl.substr(0, decl.find(')', fp));
      size_t e = decl.size();
      while (e > 0 && !is_ident_char(decl[e - 1]))
        --e;
      size_t b = e;
      while (b > 0 && is_ident_char(decl[b - 1]))
        --b;
      if (b < e)
        names.insert(decl.substr(b, e - b));
    }
  }
  return names;
}

bool mentions_any(const std::string &spelling, const std::set<std::string> &names) {
  for (size_t i = 0; i < spelling.size();) {
    if (!is_ident_char(spelling[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < spelling.size() && is_ident_char(spelling[j]))
      ++j;
    if (names.count(spelling.substr(i, j - i)))
      return true;
    i = j;
  }
  return false;
}

// C library headers that a kernel build cannot include; include/ava/kcompat
// supplies the others the API headers need.
bool is_user_only_include(const std::string &line) {
  static const char *const kKcompat[] = {"<stdint.h>", "<stddef.h>", "<stdbool.h>", "<string.h>"};
  if (line.rfind("#include", 0) != 0 || line.find('<') == std::string::npos)
    return false;
  for (const char *h : kKcompat)
    if (line.find(h) != std::string::npos)
      return false;
  const size_t open = line.find('<');
  const std::string name = line.substr(open + 1, line.find('>') - open - 1);
  static const std::set<std::string> kLibc = {
      "assert.h",   "ctype.h",  "dlfcn.h",     "errno.h", "fcntl.h",   "float.h",
      "inttypes.h", "limits.h", "malloc.h",    "math.h",  "pthread.h", "sched.h",
      "signal.h",   "stdarg.h", "stdatomic.h", "stdio.h", "stdlib.h",  "strings.h",
      "threads.h",  "time.h",   "unistd.h",    "wchar.h", "ava/spec.h"};
  return kLibc.count(name) != 0 || name.rfind("sys/", 0) == 0;
}

// C library headers that spec code (utility code, code around calls) uses and
// include/ava/kcompat implements for kernel builds. Only the module's source
// includes them: they are no part of the API that kernel callers see.
bool is_kcompat_code_include(const std::string &line) {
  if (line.rfind("#include", 0) != 0)
    return false;
  return line.find("<stdlib.h>") != std::string::npos ||
         line.find("<pthread.h>") != std::string::npos;
}

class KernelGen {
public:
  KernelGen(const Spec &spec, const std::string &file_name)
      : spec_(spec), id_(spec.identifier), up_(upper(spec.identifier)), out_(file_name) {}
  std::string source();

private:
  void preamble();
  void callback_dispatch();
  void remote_body(const Function &fn);
  void stub(const Function &fn);
  void module_glue();
  bool needs_new_ids() const;
  std::string conn() const { return "ava_kern_" + id_ + "_conn"; }
  std::string error_return(const Function &fn) const {
    return fn.ret.kind == TypeInfo::Kind::Void
               ? "return;"
               : "return (" + fn.ret.spelling + ")(" + *fn.error + ");";
  }

  const Spec &spec_;
  std::string id_;
  std::string up_;
  Emitter out_;
};

bool KernelGen::needs_new_ids() const {
  for (const Function &fn : spec_.functions) {
    if (!kernel_exclusion_reason(spec_, fn).empty() || !(fn.async || fn.async_if))
      continue;
    for (const Param &p : fn.params)
      if (p.info.role == Role::Buffer && p.info.elem_allocates)
        return true;
  }
  return false;
}

void KernelGen::preamble() {
  out_.line(banner(spec_));
  out_.line("/*");
  out_.line(" * Kernel-mode stubs of spec \"" + spec_.name + "\": the module ava_" + id_ +
            ".ko exports the API");
  out_.line(" * declared in " + id_ + "_kern.h and forwards each call through ava.ko.");
  out_.line(" * Kernel rules: process context only (stubs sleep, killable and bounded, in");
  out_.line(" * ava_kcall_invoke), no floating point, fixed-size stack frames, and every");
  out_.line(" * allocation (the runtime's, and spec code's through include/ava/kcompat)");
  out_.line(" * is GFP_KERNEL and checked.");
  out_.line(" */");
  out_.line("#include <linux/atomic.h>");
  out_.line("#include <linux/errno.h>");
  out_.line("#include <linux/kernel.h>");
  out_.line("#include <linux/module.h>");
  out_.line("#include <linux/string.h>");
  out_.line("#include <linux/types.h>");
  bool any_code_include = false;
  for (const std::string &inc : spec_.includes) {
    if (!is_kcompat_code_include(inc))
      continue;
    if (!any_code_include)
      out_.line("\n/* The C library of the spec's code, from include/ava/kcompat. */");
    any_code_include = true;
    out_.line(inc);
  }
  out_.line();
  out_.line("#include \"" + id_ + "_kern.h\"");
  out_.line("#include \"ava/kcall.h\"");
  out_.line("#include \"" + wire_header_name(spec_) + "\"");
  out_.line("/* Not used here: included so that kernel builds check the command table too. */");
  out_.line("#include \"" + spec_.identifier + "_cmds.h\"");
  out_.line();
  out_.line("/* Spec code sees the guest side: the module is a guest of the host. */");
  out_.line("#define ava_is_guest 1");
  out_.line("#define ava_is_worker 0");
  out_.line("#define ava_handle_object(T, id) ((T)(uintptr_t)(id))");
  out_.line("#define ava_handle_id(T, object) ((uint64_t)(uintptr_t)(object))");
  out_.line("#define ava_handle_invalid(T) 0");
  out_.line("#define ava_handle_held(T, object) 0u");
  out_.line("/* As shim/ava_shim.h, which is user space only. */");
  out_.line("#define AVA_LIFETIME_CALL 0u");
  out_.line("#define AVA_LIFETIME_COUPLED 1u");
  out_.line("#define AVA_LIFETIME_MANUAL 2u");
  out_.line("#define AVA_LIFETIME_STATIC 3u");
  out_.line("#define AVA_LIFETIME_ONCE 4u");
  out_.line();
  bool any_rename = false;
  for (const Function &fn : spec_.functions) {
    if (!kernel_exclusion_reason(spec_, fn).empty())
      continue;
    if (!any_rename)
      out_.line("/* Spec code calling the API reaches these stubs, as in the guest library. */");
    any_rename = true;
    out_.line("#define " + fn.name + " ava_" + fn.name);
  }
  if (any_rename)
    out_.line();
  out_.line("static struct ava_kconn *" + conn() + ";");
  out_.line("static const struct ava_kspec ava_kern_" + id_ + "_kspec;");
  out_.line();
  emit_utility_code(out_, spec_, "guest, worker and kernel");
  for (const char *h : {"guestlib_init_prologue", "guestlib_init_epilogue",
                        "guestlib_fini_prologue", "guestlib_fini_epilogue"})
    emit_hook(out_, spec_, h, "ava_kern_" + id_ + "_" + h);
  if (needs_new_ids()) {
    out_.line("/* Ids of objects that async calls create: picked here, unique per connection. */");
    out_.line("static atomic64_t ava_kern_" + id_ + "_next_id = ATOMIC64_INIT(0);");
    out_.line();
    out_.line("static void ava_kern_" + id_ + "_new_handle_ids(void *array, u64 count)");
    out_.line("{");
    out_.line("\tu8 *slots = array;");
    out_.line("\tu64 i;");
    out_.line();
    out_.line("\tfor (i = 0; i < count; ++i) {");
    out_.line("\t\tconst u64 id = AVA_GUEST_ID_BIT |");
    out_.line("\t\t\t       ((u64)atomic64_inc_return(&ava_kern_" + id_ +
              "_next_id) & ~AVA_GUEST_ID_MASK);");
    out_.line();
    out_.line("\t\tmemcpy(slots + i * sizeof(id), &id, sizeof(id));");
    out_.line("\t}");
    out_.line("}");
    out_.line();
  }
}

void KernelGen::callback_dispatch() {
  if (spec_.callbacks.empty())
    return;
  const std::string name = "ava_kern_" + id_ + "_callback";
  out_.line("static int " + name +
            "(ava_u32 ava_decl_id, void (*ava_fn)(void), void *ava_userdata,");
  out_.line("\t\t\t\tconst void *ava_args, ava_u64 ava_args_len, const ava_u8 *ava_payload,");
  out_.line("\t\t\t\tava_u64 ava_payload_len)");
  out_.line("{");
  out_.line("\t/* Callbacks without buffers never look at the payload. */");
  out_.line("\t(void)ava_payload;\n\t(void)ava_payload_len;");
  out_.line("\tswitch (ava_decl_id) {");
  for (const Function &cb : spec_.callbacks) {
    out_.line("\tcase " + cb_id_macro(spec_, cb) + ": {");
    if (fn_has_float(cb)) {
      out_.line("\t\t/* Floating point arguments: no kernel caller registers this callback. */");
      out_.line("\t\treturn -EPROTO;");
      out_.line("\t}");
      continue;
    }
    out_.line("\t\tconst " + cb_struct(spec_, cb) + " *ava_a = ava_args;");
    for (const Param &p : cb.params)
      out_.line("\t\t" + declarator(p.type, p.name) + ";");
    out_.line();
    out_.line("\t\tif (ava_args_len != sizeof(*ava_a))");
    out_.line("\t\t\treturn -EPROTO;");
    std::string call_types;
    for (const Param &p : cb.params) {
      const std::string f = "ava_a->" + p.name;
      call_types += (call_types.empty() ? "" : ", ") + p.type.spelling;
      switch (p.info.role) {
      case Role::Scalar:
        out_.line("\t\t" + p.name + " = (" + p.type.spelling + ")" + f + ";");
        break;
      case Role::Bytes:
        out_.line("\t\tmemcpy(&" + p.name + ", " + f + ", sizeof(" + p.name + "));");
        break;
      case Role::Handle:
      case Role::Opaque:
        out_.line("\t\t" + p.name + " = (" + p.type.spelling + ")(uintptr_t)" + f + ";");
        break;
      case Role::Userdata:
        out_.line("\t\t" + p.name + " = ava_userdata;");
        break;
      case Role::Buffer:
        out_.line("\t\tif (ava_kcallback_buffer(&" + f + ", ava_payload, ava_payload_len,");
        out_.line("\t\t\t\t\t(const void **)&" + p.name + ") != 0)");
        out_.line("\t\t\treturn -EPROTO;");
        break;
      default:
        break;
      }
    }
    for (const Param &p : cb.params)
      if (callback_buffer_sized_by_others(p))
        emit_callback_size_check(out_, p, "\t\t", "ava_u32", "ava_u64", "return -EPROTO;");
    out_.line("\t\t((void (*)(" + (call_types.empty() ? std::string("void") : call_types) +
              "))ava_fn)(" + arg_list(cb) + ");");
    out_.line("\t\treturn 0;");
    out_.line("\t}");
  }
  out_.line("\tdefault:");
  out_.line("\t\t(void)ava_fn;\n\t\t(void)ava_userdata;");
  out_.line("\t\treturn -EPROTO;");
  out_.line("\t}");
  out_.line("}");
  out_.line();
}

void KernelGen::remote_body(const Function &fn) {
  StubDialect d;
  d.call_type = "struct ava_kcall";
  d.u32 = "ava_u32";
  d.u64 = "ava_u64";
  d.s64 = "ava_s64";
  d.call_prefix = "ava_kcall";
  d.context = conn();
  d.new_handle_ids = "ava_kern_" + id_ + "_new_handle_ids";
  d.handle_released = "ava_kconn_handle_released";
  d.async_error_test = " > 0";
  d.error_return = [this](const Function &f) { return error_return(f); };
  emit_remote_body(out_, spec_, fn, d);
}

void KernelGen::stub(const Function &fn) {
  const std::string name = "ava_" + fn.name;
  const bool guest_code = !fn.code.empty() && !fn.disable_native_call;
  if (!guest_code) {
    out_.line(prototype(fn, name));
    remote_body(fn);
  } else {
    // The spec's code runs around the remote call, as in the guest library.
    const std::string remote = "ava_kern_remote_" + fn.name;
    out_.line("static " + prototype(fn, remote));
    remote_body(fn);
    out_.line(prototype(fn, name));
    out_.line("{");
    out_.line("#define ava_execute() " + remote + "(" + arg_list(fn) + ")");
    out_.spec_code(fn.code, fn.code_loc);
    out_.line("#undef ava_execute");
    out_.line("}");
  }
  out_.line("EXPORT_SYMBOL_GPL(" + name + ");");
  out_.line();
}

void KernelGen::module_glue() {
  const std::string k = "ava_kern_" + id_;
  out_.line("static const char *const " + k + "_func_names[] = {");
  out_.line("\tNULL,");
  for (const Function &fn : spec_.functions)
    out_.line("\t\"" + fn.name + "\",");
  out_.line("};");
  out_.line();
  out_.line("static const struct ava_kspec " + k + "_kspec = {");
  out_.line("\t.name = AVA_" + up_ + "_SPEC_NAME,");
  out_.line("\t.id = AVA_" + up_ + "_SPEC_ID,");
  out_.line("\t.hash = AVA_" + up_ + "_SPEC_HASH,");
  out_.line("\t.nfuncs = AVA_" + up_ + "_NFUNCS,");
  out_.line("\t.func_names = " + k + "_func_names,");
  out_.line("\t.callback_dispatch = " +
            (spec_.callbacks.empty() ? std::string("NULL") : k + "_callback") + ",");
  out_.line("\t.cmds = &ava_" + id_ + "_cmd_table,");
  out_.line("};");
  out_.line();
  auto hook = [&](const char *h) {
    if (spec_.hooks.count(std::string("guestlib_") + h))
      out_.line("\t" + k + "_guestlib_" + h + "();");
  };
  out_.line("static int __init " + k + "_init(void)");
  out_.line("{");
  out_.line("\tint err;");
  out_.line();
  const std::string table = "&ava_" + id_ + "_cmd_table";
  hook("init_prologue");
  // The table first: ava.ko polices processes' slots of this spec with it.
  out_.line("\terr = ava_cmds_register(" + table + ");");
  out_.line("\tif (err) {");
  out_.line("\t\tpr_err(\"ava_" + id_ +
            ": cannot register the command table with ava.ko: %d\\n\", err);");
  out_.line("\t\treturn err;");
  out_.line("\t}");
  out_.line("\terr = ava_kconn_open(&" + k + "_kspec, 0, &" + conn() + ");");
  out_.line("\tif (err) {");
  out_.line("\t\tpr_err(\"ava_" + id_ + ": cannot connect to the ava host: %d\\n\", err);");
  out_.line("\t\tgoto err_unregister;");
  out_.line("\t}");
  hook("init_epilogue");
  out_.line("\treturn 0;");
  out_.line();
  out_.line("err_unregister:");
  out_.line("\tava_cmds_unregister(" + table + ");");
  out_.line("\treturn err;");
  out_.line("}");
  out_.line();
  out_.line("static void __exit " + k + "_exit(void)");
  out_.line("{");
  hook("fini_prologue");
  out_.line("\tava_kconn_close(" + conn() + ");");
  hook("fini_epilogue");
  out_.line("\tava_cmds_unregister(" + table + ");");
  out_.line("}");
  out_.line();
  out_.line("module_init(" + k + "_init);");
  out_.line("module_exit(" + k + "_exit);");
  out_.line("MODULE_LICENSE(\"Dual MIT/GPL\");");
  out_.line("MODULE_DESCRIPTION(\"ava: kernel-mode API of " + spec_.name + " " + spec_.version +
            ", remoted through ava.ko\");");
  out_.line("MODULE_SOFTDEP(\"pre: ava\");");
}

std::string KernelGen::source() {
  preamble();
  callback_dispatch();
  for (const Function &fn : spec_.functions)
    if (kernel_exclusion_reason(spec_, fn).empty())
      stub(fn);
  module_glue();
  return out_.text();
}

} // namespace

std::string kernel_exclusion_reason(const Spec &spec, const Function &fn) {
  if (fn.unsupported)
    return "unsupported by the spec";
  if (fn.variadic)
    return "variadic";
  if (fn_has_float(fn))
    return "floating point argument or result (no FP in the kernel)";
  if (fn.internal) {
    const std::set<std::string> own = utility_typedefs(spec);
    bool uses_own = mentions_any(fn.ret.spelling, own);
    for (const Param &p : fn.params)
      uses_own = uses_own || mentions_any(p.type.spelling, own);
    if (uses_own)
      return "a helper whose types the spec's utility code defines (not in an API header)";
  }
  return "";
}

std::string generate_kernel_header(const Spec &spec) {
  const std::string id = spec.identifier;
  const std::string up = upper(id);
  Emitter out("");
  out.line(banner(spec));
  out.line("/*");
  out.line(" * Kernel-mode API of spec \"" + spec.name + "\" " + spec.version +
           ", exported by the module ava_" + id + ".ko.");
  out.line(" *");
  out.line(" * How to use: include this header (ccflags: -I$(AVA_ROOT)/include/ava/kcompat");
  out.line(" * -I$(AVA_ROOT)/include, this directory and the API's header directories, as");
  out.line(" * in the generated Kbuild), call ava_<function> where user space calls");
  out.line(" * <function>, and build with KBUILD_EXTRA_SYMBOLS=<this dir>/Module.symvers.");
  out.line(" * Load ava.ko, then ava_" + id + ".ko (it connects at init), then your module.");
  out.line(" * Calls behave as in user space: same arguments, handles, async rules and");
  out.line(" * return values; a call that cannot reach the host returns the spec's error");
  out.line(" * value. Process context only: a call sleeps (killable, bounded by a");
  out.line(" * timeout) until the host replies. Buffers are kernel memory. Callbacks run");
  out.line(" * on ava.ko's callback kthread, which may sleep and make calls.");
  out.line(" */");
  out.line("#ifndef AVA_" + up + "_KERN_H");
  out.line("#define AVA_" + up + "_KERN_H");
  out.line();
  for (const std::string &inc : spec.includes)
    if (!is_user_only_include(inc))
      out.line(inc);
  out.line();
  std::vector<std::pair<std::string, std::string>> excluded;
  for (const std::string &name : spec.replacement_functions)
    excluded.emplace_back(name, "guest-only replacement code (user space, uses the C library)");
  for (const Function &fn : spec.functions) {
    const std::string why = kernel_exclusion_reason(spec, fn);
    if (!why.empty()) {
      excluded.emplace_back(fn.name, why);
      continue;
    }
    if (fn.internal)
      out.line("/* A helper of the spec (no API function): kernel callers call it directly. */");
    else if (!fn.code.empty() && !fn.disable_native_call)
      out.line("/* Runs the spec's guest-side code around the call, as in user space. */");
    out.line(prototype(fn, "ava_" + fn.name) + ";");
  }
  if (!excluded.empty()) {
    out.line();
    out.line("/*");
    out.line(" * Not in the kernel API:");
    for (const auto &[name, why] : excluded)
      out.line(" *   " + name + ": " + why);
    out.line(" */");
  }
  out.line();
  out.line("#endif /* AVA_" + up + "_KERN_H */");
  return wrap_generated_c(out.text(), id + "_kern.h");
}

std::string generate_kernel_source(const Spec &spec, const std::string &file_name) {
  KernelGen gen(spec, file_name);
  return wrap_generated_c(gen.source(), file_name);
}

std::string generate_kbuild(const Spec &spec, const std::vector<std::string> &include_dirs,
                            const std::vector<std::string> &system_api_dirs) {
  const std::string id = spec.identifier;
  std::string out = banner(spec, "#", "") + "\n";
  out += "# Kernel-mode API of spec \"" + spec.name + "\": the module ava_" + id + ".ko (see " +
         id + "_kern.h).\n";
  out += "#   make -C /lib/modules/$(uname -r)/build M=$PWD AVA_ROOT=<ava source tree> \\\n";
  out += "#        [KBUILD_EXTRA_SYMBOLS=<ava.ko build>/Module.symvers] modules\n";
  out += "ifeq ($(AVA_ROOT),)\n";
  out += "$(error AVA_ROOT is not set: pass AVA_ROOT=<ava source tree> to make)\n";
  out += "endif\n";
  out += "obj-m := ava_" + id + ".o\n";
  out += "ava_" + id + "-y := " + id + "_kern.o\n";
  out += "ccflags-y := -Werror -I$(AVA_ROOT)/include/ava/kcompat -I$(AVA_ROOT)/include -I$(src)\n";
  for (const std::string &dir : include_dirs)
    out += "ccflags-y += -I" + dir + "\n";
  if (system_api_dirs.empty())
    return out;
  out += "# API headers of a system include tree, linked in alone: the C library beside\n";
  out += "# them must stay out of a kernel build.\n";
  for (const std::string &dir : system_api_dirs) {
    const std::string name = dir.substr(dir.rfind('/') + 1);
    out += "$(shell mkdir -p $(src)/ava_api && ln -sfn " + dir + " $(src)/ava_api/" + name + ")\n";
  }
  out += "ccflags-y += -I$(src)/ava_api\n";
  return out;
}

} // namespace cava
