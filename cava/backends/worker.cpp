// SPDX-License-Identifier: MIT
// Backend: the worker plugin. One handler per function decodes a CALL in two
// phases (wire values, then the spec's annotations checked against them),
// calls the real API and builds the reply through worker/ava_worker_rt.h.
#include "cava/backends/backends.hpp"
#include "cava/backends/common.hpp"

#include <algorithm>

namespace cava {
namespace {

class WorkerGen {
public:
  WorkerGen(const Spec &spec, const std::string &file_name)
      : spec_(spec), p_(prefix(spec)), out_(file_name) {}
  std::string run();

private:
  void preamble();
  void trampoline(const Function &cb);
  void impl(const Function &fn);
  void handler(const Function &fn);
  void tables();
  std::string fail_return(const Function &fn) const {
    const std::string cls = std::to_string(fn.ret_class) + "u";
    const std::string err = fn.error ? "(int64_t)(" + *fn.error + ")" : std::string("0");
    return "return ava_w_fail(ava_w, ava_st, " + cls + ", " + err + ");";
  }
  bool has_impl(const Function &fn) const { return !fn.code.empty(); }
  // An out array of created handles of a call that may be sent async.
  static bool guest_named(const Function &fn, const Param &p) {
    return p.info.role == Role::Buffer && p.info.elem_allocates && (fn.async || fn.async_if);
  }

  const Spec &spec_;
  std::string p_;
  Emitter out_;
};

void WorkerGen::preamble() {
  out_.line(banner(spec_));
  out_.line("/*");
  out_.line(" * Worker plugin of spec \"" + spec_.name +
            "\": serves CALLs from guest libraries with the real library.");
  out_.line(" */");
  out_.line("#include <stddef.h>");
  out_.line("#include <stdint.h>");
  out_.line("#include <string.h>");
  out_.line();
  for (const std::string &inc : spec_.includes)
    out_.line(inc);
  out_.line();
  out_.line("#include \"worker/ava_worker_rt.h\"");
  out_.line("#include \"shim/ava_shim.h\" /* AVA_LIFETIME_* */");
  out_.line("#include \"" + wire_header_name(spec_) + "\"");
  out_.line("#include \"" + spec_.identifier + "_cmds.h\"");
  out_.line();
  out_.line("#define ava_is_guest 0");
  out_.line("#define ava_is_worker 1");
  out_.line();
  out_.line("/* Stands in for user data the guest passed without a callback. */");
  out_.line("__attribute__((unused)) static char " + p_ + "_userdata_mark;");
  out_.line();
  out_.line("/* ava_handle_object / ava_handle_id for spec code: handle types by name. */");
  out_.line("static uint32_t " + p_ + "_type_by_name(const char *ava_name)");
  out_.line("{");
  for (size_t i = 0; i < spec_.handle_types.size(); ++i) {
    out_.line("\tif (strcmp(ava_name, \"" + spec_.handle_types[i].name + "\") == 0)");
    out_.line("\t\treturn " + type_id_macro(spec_, static_cast<uint32_t>(i + 1)) + ";");
  }
  out_.line("\t(void)ava_name;");
  out_.line("\treturn 0;");
  out_.line("}");
  out_.line();
  out_.line("__attribute__((unused)) static void *__ava_handle_object(unsigned long long ava_id, "
            "const char *ava_type)");
  out_.line("{");
  out_.line("\treturn ava_w_current_handle(ava_id, " + p_ + "_type_by_name(ava_type));");
  out_.line("}");
  out_.line();
  out_.line("__attribute__((unused)) static unsigned long long __ava_handle_id(const void "
            "*ava_object, const char *ava_type)");
  out_.line("{");
  out_.line("\treturn ava_w_current_handle_id((void *)ava_object, " + p_ +
            "_type_by_name(ava_type));");
  out_.line("}");
  out_.line();
  out_.line("__attribute__((unused)) static int __ava_handle_invalid(const char *ava_type)");
  out_.line("{");
  out_.line("\treturn ava_w_current_bad_handle(" + p_ + "_type_by_name(ava_type));");
  out_.line("}");
  out_.line();
  out_.line("__attribute__((unused)) static unsigned int __ava_handle_held(const void "
            "*ava_object, const char *ava_type)");
  out_.line("{");
  out_.line("\treturn ava_w_current_handle_held((void *)ava_object, " + p_ +
            "_type_by_name(ava_type));");
  out_.line("}");
  out_.line();
  out_.line("#define ava_handle_object(T, id) ((T)__ava_handle_object((unsigned long long)(id), "
            "#T))");
  out_.line("#define ava_handle_invalid(T) __ava_handle_invalid(#T)");
  out_.line("#define ava_handle_id(T, object) __ava_handle_id((const void *)(object), #T)");
  out_.line("#define ava_handle_held(T, object) __ava_handle_held((const void *)(object), #T)");
  out_.line();
  emit_utility_code(out_, spec_, "compiled into guest and worker");
  emit_hook(out_, spec_, "worker_init_epilogue", p_ + "_worker_init_epilogue");
}

// A trampoline stands in for the guest's callback: the real library calls
// it, and it forwards the call to the guest that registered the callback.
void WorkerGen::trampoline(const Function &cb) {
  out_.line("static " + prototype(cb, p_ + "_tramp_" + cb.name));
  out_.line("{");
  out_.line("\t" + cb_struct(spec_, cb) + " ava_a;");
  out_.line("\tstruct ava_wcb ava_cb;");
  for (const Param &p : cb.params) {
    if (p.info.role == Role::Buffer) {
      out_.line("\tuint32_t ava_dir_" + p.name + " = " + (p.info.default_in ? "AVA_BUF_IN" : "0") +
                ";");
      out_.line("\tuint64_t ava_count_" + p.name + " = 0;");
      out_.line("\tuint32_t ava_life_" + p.name + " = AVA_LIFETIME_CALL;");
      out_.line("\tuint64_t ava_coupled_" + p.name + " = 0;");
    }
  }
  out_.line();
  out_.line("\tmemset(&ava_a, 0, sizeof(ava_a));");
  const Param &ud = cb.params[cb.userdata_param];
  out_.line("\tif (ava_wcb_begin(&ava_cb, " + ud.name + ", " + cb_id_macro(spec_, cb) + ") != 0)");
  out_.line("\t\treturn;");
  for (const Param &p : cb.params) {
    const std::string f = "ava_a." + p.name;
    switch (p.info.role) {
    case Role::Scalar:
      out_.line("\t" + f + " = (" + (p.type.is_signed ? "ava_s64" : "ava_u64") + ")" + p.name +
                ";");
      break;
    case Role::Float:
    case Role::Bytes:
      out_.line("\tmemcpy(" + std::string(p.info.role == Role::Float ? "&" : "") + f + ", &" +
                p.name + ", sizeof(" + p.name + "));");
      break;
    case Role::Handle:
      out_.line("\t" + f + " = ava_wcb_handle(&ava_cb, (void *)" + p.name + ", " +
                type_id_macro(spec_, p.info.handle_type) + ");");
      break;
    case Role::Opaque:
      out_.line("\t" + f + " = (ava_u64)(uintptr_t)" + p.name + ";");
      break;
    case Role::Buffer:
      out_.line("\tif (" + p.name + " != NULL) {");
      emit_annotation_eval(out_, p.block, p, "\t\t", [](const std::string &) { return "0"; });
      out_.line("\t}");
      out_.line("\t(void)ava_life_" + p.name + ";\n\t(void)ava_coupled_" + p.name + ";");
      out_.line("\tava_wcb_put_buffer(&ava_cb, &" + f + ", (ava_dir_" + p.name +
                " & AVA_BUF_IN) ? " + p.name + " : NULL, ava_count_" + p.name + ", " +
                elem_size_expr(p) + ");");
      break;
    default:
      break;
    }
  }
  out_.line("\tava_wcb_invoke(&ava_cb, &ava_a, sizeof(ava_a), " +
            std::string(cb.async ? "0" : "1") + ");");
  out_.line("}");
  out_.line();
}

void WorkerGen::impl(const Function &fn) {
  out_.line("static " + prototype(fn, p_ + "_impl_" + fn.name));
  out_.line("{");
  if (!fn.disable_native_call)
    out_.line("#define ava_execute() " + fn.name + "(" + arg_list(fn) + ")");
  out_.spec_code(fn.code, fn.code_loc);
  if (!fn.disable_native_call)
    out_.line("#undef ava_execute");
  out_.line("}");
  out_.line();
}

void WorkerGen::handler(const Function &fn) {
  const bool sync = !fn.async;
  const bool has_ret = fn.ret.kind != TypeInfo::Kind::Void;
  out_.line("static int " + p_ + "_serve_" + fn.name + "(struct ava_wcall *ava_w)");
  out_.line("{");
  out_.line("\tconst " + call_struct(spec_, fn) + " *ava_a;");
  if (sync)
    out_.line("\t" + reply_struct(spec_, fn) + " ava_r;");
  for (const Param &p : fn.params)
    out_.line("\t" + declarator(p.type, p.name) + ";");
  if (has_ret)
    out_.line("\t" + declarator(fn.ret, "ava_ret") + ";");
  for (const Param &p : fn.params) {
    if (p.info.role == Role::Buffer) {
      out_.line("\tuint32_t ava_dir_" + p.name + " = " + (p.info.default_in ? "AVA_BUF_IN" : "0") +
                ";");
      out_.line("\tuint64_t ava_count_" + p.name + " = 0;");
    }
    if (p.info.role == Role::Buffer || p.info.role == Role::Callback) {
      out_.line("\tuint32_t ava_life_" + p.name + " = AVA_LIFETIME_CALL;");
      out_.line("\tuint64_t ava_coupled_" + p.name + " = 0;");
    }
    if (guest_named(fn, p))
      out_.line("\tuint64_t *ava_ids_" + p.name + " = NULL;");
    if (p.info.role == Role::Handle && p.info.deallocates)
      out_.line("\tint ava_taken_" + p.name + " = 0;");
  }
  out_.line("\tint ava_st;");
  out_.line();
  out_.line("\tava_st = ava_w_args(ava_w, sizeof(*ava_a), (const void **)&ava_a);");
  out_.line("\tif (ava_st != 0)");
  out_.line("\t\t" + fail_return(fn));
  if (sync)
    out_.line("\tmemset(&ava_r, 0, sizeof(ava_r));");
  out_.line();
  out_.line("\t/* Phase 1: values as sent by the guest. */");
  for (const Param &p : fn.params) {
    const std::string f = "ava_a->" + p.name;
    switch (p.info.role) {
    case Role::Scalar:
      out_.line("\t" + p.name + " = (" + p.type.spelling + ")" + f + ";");
      break;
    case Role::Float:
    case Role::Bytes:
      out_.line("\tmemcpy(&" + p.name + ", " + (p.info.role == Role::Float ? "&" : "") + f +
                ", sizeof(" + p.name + "));");
      break;
    case Role::Handle: {
      const HandleType &h = spec_.handle_types[p.info.handle_type - 1];
      std::string indent = "\t";
      if (!h.values.empty()) {
        // Values the API defines (not objects) pass as they are.
        std::string cond;
        for (const std::string &v : h.values)
          cond += (cond.empty() ? "" : " || ") + f + " == (ava_u64)(uintptr_t)(" + v + ")";
        out_.line("\tif (" + cond + ")");
        out_.line("\t\t" + p.name + " = (" + p.type.spelling + ")(uintptr_t)" + f + ";");
        out_.line("\telse");
        indent = "\t\t";
      } else {
        out_.line("\t/* An unknown id becomes NULL: the library reports its own error. */");
      }
      if (p.info.deallocates) {
        // One of the guest's references is taken before the API drops one:
        // a guest that holds none (it released them all, or another of its
        // threads is releasing the last) gets NULL, never an over-release
        // that frees an object the API itself still uses.
        out_.line(indent + "ava_taken_" + p.name + " = ava_w_handle_take(ava_w, " + f + ", " +
                  type_id_macro(spec_, p.info.handle_type) + ", (void **)&" + p.name + ");");
        break;
      }
      out_.line(indent + "(void)ava_w_handle(ava_w, " + f + ", " +
                type_id_macro(spec_, p.info.handle_type) + ", (void **)&" + p.name + ");");
      break;
    }
    case Role::Opaque:
      out_.line("\t" + p.name + " = (" + p.type.spelling + ")(uintptr_t)" + f + ";");
      break;
    case Role::Buffer:
      // The annotations may read a private buffer (a string's strlen, a
      // property list's end): never in guest-writable memory.
      out_.line("\tava_st = ava_w_buffer_in" +
                std::string(p.info.worker_private ? "_private" : "") + "(ava_w, &" + f +
                ", (void **)&" + p.name + ");");
      out_.line("\tif (ava_st != 0)");
      out_.line("\t\t" + fail_return(fn));
      break;
    case Role::Callback:
      out_.line("\t" + p.name + " = NULL;");
      break;
    case Role::Userdata:
      // Replaced by the callback's context below; without a callback the API
      // still sees whether the guest passed any.
      out_.line("\t" + p.name + " = " + f + " ? (void *)&" + p_ + "_userdata_mark : NULL;");
      break;
    case Role::None:
      break;
    }
  }
  out_.line();
  out_.line("\t/* Phase 2: the spec's annotations, evaluated with those values. */");
  auto coupled = [&](const std::string &obj) { return "ava_a->" + obj; };
  for (const Param &p : fn.params) {
    const std::string f = "ava_a->" + p.name;
    if (p.info.role == Role::Buffer) {
      out_.line("\tif (" + f + ".flags & AVA_BUF_PRESENT) {");
      emit_annotation_eval(out_, p.block, p, "\t\t", coupled);
      out_.line("\t}");
      if (guest_named(fn, p)) {
        out_.line("\t/* Sent async: the guest names the objects the call creates. */");
        out_.line("\tif (ava_w_is_async(ava_w) && (ava_dir_" + p.name + " & AVA_BUF_OUT))");
        out_.line("\t\tava_dir_" + p.name + " = AVA_BUF_IN;");
      }
      out_.line("\tava_st = ava_w_buffer_check(ava_w, &" + f + ", ava_count_" + p.name + ", " +
                elem_size_expr(p) + ", ava_dir_" + p.name +
                (p.info.worker_private ? " | AVA_W_PRIVATE" : "") + ", (void **)&" + p.name + ");");
      out_.line("\tif (ava_st != 0)");
      out_.line("\t\t" + fail_return(fn));
      if (guest_named(fn, p)) {
        out_.line("\tif (ava_w_is_async(ava_w) && " + p.name + " != NULL) {");
        out_.line("\t\tava_st = ava_w_guest_ids(ava_w, " + p.name + ", ava_count_" + p.name +
                  ", &ava_ids_" + p.name + ");");
        out_.line("\t\tif (ava_st != 0)");
        out_.line("\t\t\t" + fail_return(fn));
        out_.line("\t}");
      }
      if (p.info.elem_handle_type) {
        out_.line("\tif (" + p.name + " != NULL && (ava_dir_" + p.name + " & AVA_BUF_IN))");
        out_.line("\t\t(void)ava_w_handles_in(ava_w, (void *)" + p.name + ", ava_count_" + p.name +
                  ", " + type_id_macro(spec_, p.info.elem_handle_type) + ");");
      }
      if (block_has_lifetime(p.block)) {
        out_.line("\tif (" + p.name + " != NULL && ava_life_" + p.name +
                  " != AVA_LIFETIME_CALL) {");
        out_.line("\t\t" + p.name + " = ava_w_buffer_keep(ava_w, " + p.name + ", ava_count_" +
                  p.name + " * " + elem_size_expr(p) + ", ava_life_" + p.name + ", ava_coupled_" +
                  p.name + ");");
        out_.line("\t\tif (" + p.name + " == NULL) {");
        out_.line("\t\t\tava_st = AVA_E_NOMEM;");
        out_.line("\t\t\t" + fail_return(fn));
        out_.line("\t\t}");
        out_.line("\t}");
      } else {
        out_.line("\t(void)ava_life_" + p.name + ";\n\t(void)ava_coupled_" + p.name + ";");
      }
    } else if (p.info.role == Role::Callback) {
      emit_annotation_eval(out_, p.block, p, "\t", coupled);
      const Param &ud = fn.params[fn.userdata_param];
      out_.line("\tif (" + f + " != 0) {");
      out_.line("\t\t" + p.name + " = (" + p.type.spelling + ")" + p_ + "_tramp_" +
                p.info.callback_decl + ";");
      out_.line("\t\t" + ud.name + " = ava_w_callback_ctx(ava_w, " + f + ", ava_life_" + p.name +
                ", ava_coupled_" + p.name + ");");
      out_.line("\t\tif (" + ud.name + " == NULL) {");
      out_.line("\t\t\tava_st = AVA_E_NOMEM;");
      out_.line("\t\t\t" + fail_return(fn));
      out_.line("\t\t}");
      out_.line("\t}");
    }
  }
  out_.line();
  // Resource amounts that are neither a literal nor one scalar argument (the
  // command table's AVA_CMD_RES_DYNAMIC): only this code can compute them,
  // from the decoded arguments, before the API is asked.
  for (const Annotation *a : resource_annotations(fn, Ann::AllocatesResource)) {
    const std::string amount = a->args.size() > 1 ? a->args[1] : "1";
    std::string param;
    if (int_literal(amount) || amount_is_scalar_arg(fn, amount, &param))
      continue;
    const std::string name = a->args.empty() ? std::string("?") : unquote(a->args[0]);
    out_.line("	/* ava_allocates_resource(" + name + ", " + amount + ") */");
    out_.line("	ava_st = ava_w_reserve(ava_w, " + res_macro(spec_, name) + ", (uint64_t)(" +
              amount + "));");
    out_.line("	if (ava_st != 0)");
    out_.line("		" + fail_return(fn));
  }
  const std::string target = has_impl(fn) ? p_ + "_impl_" + fn.name : fn.name;
  out_.line("\t" + std::string(has_ret ? "ava_ret = " : "") + target + "(" + arg_list(fn) + ");");
  // Callbacks of a refused call never run: their contexts must not be kept.
  const bool registers = std::any_of(fn.params.begin(), fn.params.end(),
                                     [](const Param &p) { return p.info.role == Role::Callback; });
  const std::string refused = refused_condition(fn);
  if (registers && !refused.empty()) {
    out_.line("\tif (" + refused + ")");
    out_.line("\t\tava_w_callbacks_unused(ava_w);");
  }
  out_.line();
  auto adopt = [&](const std::string &indent) {
    for (const Param &p : fn.params) {
      if (!guest_named(fn, p))
        continue;
      out_.line(indent + "if (ava_ids_" + p.name + " != NULL)");
      out_.line(indent + "\t(void)ava_w_adopt_handles(ava_w, ava_ids_" + p.name + ", " + p.name +
                ", ava_count_" + p.name + ", " + type_id_macro(spec_, p.info.elem_handle_type) +
                ");");
    }
  };
  // The guest's references to the handles the call retains or releases, once
  // it succeeded: sent async or sync, the table must count what the API
  // counts (a release it missed would be done again when the guest leaves).
  auto references = [&](const std::string &indent) {
    for (const Param &p : fn.params) {
      if (p.info.role != Role::Handle || !(p.info.deallocates || p.info.retains))
        continue;
      const std::string cond =
          fn.success && has_ret ? "ava_ret == (" + *fn.success + ")" : std::string("1");
      out_.line(indent + "if (" + cond + ")");
      out_.line(indent + "\tava_w_handle_" + (p.info.retains ? "retain" : "release") +
                "(ava_w, ava_a->" + p.name + ");");
      if (p.info.deallocates && cond != "1") {
        out_.line(indent + "else if (ava_taken_" + p.name + ")");
        out_.line(indent + "\tava_w_handle_untake(ava_w, ava_a->" + p.name + ");");
      }
    }
  };
  if (fn.async) {
    adopt("\t");
    references("\t");
    if (fn.success && has_ret) {
      out_.line("\tif (!(ava_ret == (" + *fn.success + ")))");
      out_.line("\t\tava_w_async_error(ava_w, " + std::to_string(fn.ret_class) +
                "u, (int64_t)ava_ret);");
    }
    out_.line("\treturn ava_w_reply(ava_w, NULL, 0);");
    out_.line("}");
    out_.line();
    return;
  }
  if (fn.async_if) {
    // Sent async (the guest's condition held): no reply, errors come later.
    out_.line("\tif (ava_w_is_async(ava_w)) {");
    adopt("\t\t");
    references("\t\t");
    if (fn.success && has_ret) {
      out_.line("\t\tif (!(ava_ret == (" + *fn.success + ")))");
      out_.line("\t\t\tava_w_async_error(ava_w, " + std::to_string(fn.ret_class) +
                "u, (int64_t)ava_ret);");
    }
    out_.line("\t\treturn ava_w_reply(ava_w, NULL, 0);");
    out_.line("\t}");
  }
  for (const Param &p : fn.params) {
    if (p.info.role != Role::Buffer || !p.info.may_out)
      continue;
    // A failed call leaves the guest's out buffers as they were, as natively.
    const std::string ok = fn.success && has_ret ? " && ava_ret == (" + *fn.success + ")" : "";
    out_.line("\tif ((ava_dir_" + p.name + " & AVA_BUF_OUT)" + ok + ") {");
    if (p.info.elem_handle_type) {
      out_.line("\t\tif (" + p.name + " != NULL)");
      out_.line("\t\t\t(void)ava_w_handles_out(ava_w, (void *)" + p.name + ", ava_count_" + p.name +
                ", " + type_id_macro(spec_, p.info.elem_handle_type) + ", " +
                (p.info.elem_allocates ? "1" : "0") + ");");
    }
    out_.line("\t\tava_st = ava_w_buffer_out(ava_w, &ava_r." + p.name + ", " + p.name +
              ", ava_count_" + p.name + " * " + elem_size_expr(p) + ");");
    out_.line("\t\tif (ava_st != 0)");
    out_.line("\t\t\t" + fail_return(fn));
    out_.line("\t}");
  }
  switch (fn.ret_info.role) {
  case Role::Scalar:
    out_.line(std::string("\tava_r.ret = (") + (fn.ret.is_signed ? "ava_s64" : "ava_u64") +
              ")ava_ret;");
    break;
  case Role::Float:
  case Role::Bytes:
    out_.line(std::string("\tmemcpy(") + (fn.ret_info.role == Role::Float ? "&" : "") +
              "ava_r.ret, &ava_ret, sizeof(ava_ret));");
    break;
  case Role::Handle:
    out_.line("\tava_r.ret = ava_w_handle_out(ava_w, (void *)ava_ret, " +
              type_id_macro(spec_, fn.ret_info.handle_type) + ", " +
              (fn.ret_info.allocates ? "1" : "0") + ");");
    break;
  case Role::Opaque:
    out_.line("\tava_r.ret = (ava_u64)(uintptr_t)ava_ret;");
    break;
  default:
    break;
  }
  references("\t");
  out_.line("\treturn ava_w_reply(ava_w, &ava_r, sizeof(ava_r));");
  out_.line("}");
  out_.line();
}

void WorkerGen::tables() {
  const std::string up = upper(spec_.identifier);
  out_.line("static int " + p_ + "_dispatch(struct ava_wcall *ava_w, uint32_t ava_func_id)");
  out_.line("{");
  out_.line("\tswitch (ava_func_id) {");
  for (const Function &fn : spec_.functions) {
    if (fn.unsupported)
      continue;
    out_.line("\tcase " + fn_id_macro(spec_, fn) + ":");
    out_.line("\t\treturn " + p_ + "_serve_" + fn.name + "(ava_w);");
  }
  out_.line("\tdefault:");
  out_.line("\t\treturn ava_w_fail(ava_w, AVA_E_FUNC, 0, 0);");
  out_.line("\t}");
  out_.line("}");
  out_.line();
  out_.line("/* Frees an object a guest left behind, with the spec's deallocating function. */");
  out_.line("static void " + p_ + "_destroy(uint32_t ava_type, void *ava_object)");
  out_.line("{");
  out_.line("\tswitch (ava_type) {");
  for (size_t i = 0; i < spec_.handle_types.size(); ++i) {
    const HandleType &h = spec_.handle_types[i];
    if (h.destroy_function.empty())
      continue;
    // A spec-implemented destroy function exists only as its impl here.
    std::string destroy = h.destroy_function;
    for (const Function &fn : spec_.functions)
      if (fn.name == destroy && has_impl(fn))
        destroy = p_ + "_impl_" + fn.name;
    out_.line("\tcase " + type_id_macro(spec_, static_cast<uint32_t>(i + 1)) + ":");
    out_.line("\t\t(void)" + destroy + "((" + h.name + ")ava_object);");
    out_.line("\t\tbreak;");
  }
  out_.line("\tdefault:");
  out_.line("\t\t(void)ava_object;");
  out_.line("\t\tbreak;");
  out_.line("\t}");
  out_.line("}");
  out_.line();
  out_.line("static const char *const " + p_ + "_func_names[] = {");
  out_.line("\tNULL,");
  for (const Function &fn : spec_.functions)
    out_.line("\t\"" + fn.name + "\",");
  out_.line("};");
  out_.line();
  out_.line("/* AVA_F_SYNC and/or AVA_F_ASYNC per function; 0 = not supported. */");
  out_.line("static const uint32_t " + p_ + "_func_flags[] = {");
  out_.line("\t0,");
  for (const Function &fn : spec_.functions) {
    std::string flags = fn.unsupported ? "0"
                        : fn.async_if  ? "AVA_F_SYNC | AVA_F_ASYNC"
                        : fn.async     ? "AVA_F_ASYNC"
                                       : "AVA_F_SYNC";
    out_.line("\t" + flags + ", /* " + fn.name + " */");
  }
  out_.line("};");
  out_.line();
  out_.line("static const char *const " + p_ + "_type_names[] = {");
  out_.line("\tNULL,");
  for (const HandleType &h : spec_.handle_types)
    out_.line("\t\"" + h.name + "\",");
  out_.line("};");
  out_.line();
  out_.line("static const struct ava_worker_spec " + p_ + "_worker_spec = {");
  out_.line("\t.name = AVA_" + up + "_SPEC_NAME,");
  out_.line("\t.id = AVA_" + up + "_SPEC_ID,");
  out_.line("\t.hash = AVA_" + up + "_SPEC_HASH,");
  out_.line("\t.nfuncs = AVA_" + up + "_NFUNCS,");
  out_.line("\t.func_names = " + p_ + "_func_names,");
  out_.line("\t.func_flags = " + p_ + "_func_flags,");
  out_.line("\t.ntypes = " + std::to_string(spec_.handle_types.size()) + ",");
  out_.line("\t.type_names = " + p_ + "_type_names,");
  out_.line("\t.dispatch = " + p_ + "_dispatch,");
  out_.line("\t.destroy = " + p_ + "_destroy,");
  out_.line("\t.init_epilogue = " +
            (spec_.hooks.count("worker_init_epilogue") ? p_ + "_worker_init_epilogue"
                                                       : std::string("NULL")) +
            ",");
  out_.line("\t.cmds = &" + p_ + "_cmd_table,");
  out_.line("};");
  out_.line();
  out_.line("__attribute__((visibility(\"default\"))) const struct ava_worker_spec "
            "*ava_worker_spec_export(void);");
  out_.line("const struct ava_worker_spec *ava_worker_spec_export(void)");
  out_.line("{");
  out_.line("\treturn &" + p_ + "_worker_spec;");
  out_.line("}");
}

std::string WorkerGen::run() {
  preamble();
  for (const Function &cb : spec_.callbacks)
    trampoline(cb);
  for (const Function &fn : spec_.functions) {
    if (fn.unsupported)
      continue;
    if (has_impl(fn))
      impl(fn);
    handler(fn);
  }
  tables();
  return out_.text();
}

} // namespace

std::string generate_worker(const Spec &spec, const std::string &file_name) {
  WorkerGen gen(spec, file_name);
  return gen.run();
}

} // namespace cava
