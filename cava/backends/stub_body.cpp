// SPDX-License-Identifier: MIT
// The body of a remoted stub, shared by the guest library (shim/ava_shim.h)
// and the kernel module (include/ava/kcall.h) backends: the two runtimes
// have the same shape and differ only in names and integer types
// (StubDialect), so a stub marshals the same way in both.
#include "cava/backends/common.hpp"

#include <algorithm>

namespace cava {

void emit_remote_body(Emitter &out, const Spec &spec_, const Function &fn, const StubDialect &d) {
  const bool sync = !fn.async;
  const bool has_ret = fn.ret.kind != TypeInfo::Kind::Void;
  out.line("{");
  out.line("\t" + call_struct(spec_, fn) + " ava_a;");
  if (sync)
    out.line("\tconst " + reply_struct(spec_, fn) + " *ava_r = NULL;");
  out.line("\t" + d.call_type + " ava_c;");
  if (has_ret && sync)
    out.line("\t" + declarator(fn.ret, "ava_ret") + ";");
  for (const Param &p : fn.params) {
    if (p.info.role == Role::Buffer) {
      out.line("\t" + d.u32 + " ava_dir_" + p.name + " = " +
               (p.info.default_in ? "AVA_BUF_IN" : "0") + ";");
      out.line("\t" + d.u64 + " ava_count_" + p.name + " = 0;");
    }
    if (p.info.role == Role::Callback || p.info.role == Role::Buffer) {
      out.line("\t" + d.u32 + " ava_life_" + p.name + " = AVA_LIFETIME_CALL;");
      out.line("\t" + d.u64 + " ava_coupled_" + p.name + " = 0;");
    }
  }
  out.line();
  out.line("\tmemset(&ava_a, 0, sizeof(ava_a));");
  for (const Param &p : fn.params) {
    // A buffer's lifetime matters to the worker only.
    if (p.info.role == Role::Buffer)
      out.line("\t(void)ava_life_" + p.name + ";\n\t(void)ava_coupled_" + p.name + ";");
  }
  auto coupled = [&d](const std::string &obj) { return "(" + d.u64 + ")(uintptr_t)(" + obj + ")"; };
  for (const Param &p : fn.params) {
    if (p.info.role == Role::Buffer) {
      out.line("\tif (" + p.name + " != NULL) {");
      emit_annotation_eval(out, p.block, p, "\t\t", coupled);
      out.line("\t}");
    } else if (p.info.role == Role::Callback) {
      emit_annotation_eval(out, p.block, p, "\t", coupled);
    }
  }
  std::string flags = sync ? "AVA_F_SYNC" : "AVA_F_ASYNC";
  const bool shaped = !fn.async_shape.empty();
  const std::string shape_args =
      fn_id_macro(spec_, fn) + ", ava_shape, " + std::to_string(fn.async_shape.size()) + "u";
  if (shaped && !d.shape_known.empty()) {
    out.line("\tconst " + d.u64 + " ava_shape[" + std::to_string(fn.async_shape.size()) + "] = {");
    for (const std::string &e : fn.async_shape) {
      // One line per value, however the spec wrapped the expression.
      std::string flat;
      for (char c : e) {
        const bool space = c == ' ' || c == '\t' || c == '\n';
        if (!space)
          flat += c;
        else if (!flat.empty() && flat.back() != ' ')
          flat += ' ';
      }
      out.line("\t\t(" + d.u64 + ")(uintptr_t)(" + flat + "),");
    }
    out.line("\t};");
  }
  if (fn.async_if && shaped && d.shape_known.empty()) {
    out.line("\t/* This runtime learns no shapes: always sent sync, for exact errors. */");
    out.line("\tconst int ava_async = 0;");
    flags = "(ava_async ? AVA_F_ASYNC : AVA_F_SYNC)";
  } else if (fn.async_if && shaped) {
    out.line("\t/* Sent without waiting only once a call of this shape succeeded. */");
    const std::string cond = *fn.async_if == "1" ? "" : "(" + *fn.async_if + ") && ";
    out.line("\tconst int ava_async = " + cond + d.shape_known + "(" + d.context + ", " +
             shape_args + ") ? 1 : 0;");
    flags = "(ava_async ? AVA_F_ASYNC : AVA_F_SYNC)";
  } else if (fn.async_if) {
    out.line("\t/* Sent without waiting only when the spec's condition holds. */");
    out.line("\tconst int ava_async = (" + *fn.async_if + ") ? 1 : 0;");
    flags = "(ava_async ? AVA_F_ASYNC : AVA_F_SYNC)";
  }
  for (const Param &p : fn.params) {
    if (p.info.role != Role::Buffer || !p.info.elem_allocates || !(fn.async || fn.async_if))
      continue;
    // Sent without waiting, the call cannot return ids: the guest picks them.
    out.line("\tif (" + std::string(fn.async_if ? "ava_async && " : "") + p.name +
             " != NULL && (ava_dir_" + p.name + " & AVA_BUF_OUT)) {");
    out.line("\t\t" + d.new_handle_ids + "(" + p.name + ", ava_count_" + p.name + ");");
    out.line("\t\tava_dir_" + p.name + " = AVA_BUF_IN;");
    out.line("\t}");
  }
  out.line("\tif (" + d.fn("begin") + "(&ava_c, " + d.context + ", " + fn_id_macro(spec_, fn) +
           ", " + flags + (fn.flush ? " | AVA_F_FLUSH" : "") +
           (fn.device_wait && d.device_wait ? " | AVA_CALL_DEVICE_WAIT" : "") + ") != 0)");
  out.line("\t\tgoto ava_fail;");
  const Param *userdata = fn.userdata_param >= 0 ? &fn.params[fn.userdata_param] : nullptr;
  for (const Param &p : fn.params) {
    const std::string f = "ava_a." + p.name;
    switch (p.info.role) {
    case Role::Scalar:
      out.line("\t" + f + " = (" + (p.type.is_signed ? "ava_s64" : "ava_u64") + ")" + p.name + ";");
      break;
    case Role::Float:
    case Role::Bytes:
      out.line("\tmemcpy(" + std::string(p.info.role == Role::Float ? "&" : "") + f + ", &" +
               p.name + ", sizeof(" + p.name + "));");
      break;
    case Role::Handle:
    case Role::Opaque:
      out.line("\t" + f + " = (ava_u64)(uintptr_t)" + p.name + ";");
      break;
    case Role::Callback:
      out.line("\t" + f + " = " + d.fn("callback") + "(&ava_c, " +
               (d.callback_decl ? cb_id_macro(spec_, p.info.callback_decl) + ", " : std::string()) +
               "(void (*)(void))" + p.name + ", " +
               (userdata ? userdata->name : std::string("NULL")) + ", ava_life_" + p.name +
               ", ava_coupled_" + p.name + ");");
      break;
    case Role::Buffer:
      out.line("\t" + d.fn("put_buffer") + "(&ava_c, &" + f + ", " + p.name + ", ava_count_" +
               p.name + ", " + elem_size_expr(p) + ", ava_dir_" + p.name +
               (p.info.zerocopy && d.zerocopy ? " | AVA_CALL_ZEROCOPY" : "") + ");");
      break;
    case Role::Userdata:
      // Only whether there is any: an API may refuse user data without a callback.
      out.line("\t" + f + " = " + p.name + " != NULL ? 1 : 0;");
      break;
    case Role::None:
      break;
    }
  }
  // A handle the call deallocates is gone for the guest once the call
  // succeeded (cond), or once it was sent without waiting (no cond): ends
  // what the guest coupled to it.
  auto emit_released = [&](const std::string &indent, const std::string &cond) {
    for (const Param &p : fn.params) {
      if (p.info.role != Role::Handle || !p.info.deallocates)
        continue;
      const std::string call =
          d.handle_released + "(" + d.context + ", (" + d.u64 + ")(uintptr_t)" + p.name + ");";
      if (cond.empty()) {
        out.line(indent + call);
      } else {
        out.line(indent + "if (" + cond + ")");
        out.line(indent + "\t" + call);
      }
    }
  };
  if (fn.async_if) {
    out.line("\tif (ava_async) {");
    out.line("\t\tif (" + d.fn("invoke") + "(&ava_c, &ava_a, sizeof(ava_a), NULL, 0) != 0)");
    out.line("\t\t\tgoto ava_fail;");
    emit_released("\t\t", "");
    out.line("\t\t" + d.fn("end") + "(&ava_c);");
    out.line(has_ret ? "\t\treturn (" + fn.ret.spelling + ")(" + *fn.success + ");"
                     : std::string("\t\treturn;"));
    out.line("\t}");
  }
  if (!sync) {
    out.line("\tif (" + d.fn("invoke") + "(&ava_c, &ava_a, sizeof(ava_a), NULL, 0) != 0)");
    out.line("\t\tgoto ava_fail;");
    emit_released("\t", "");
    out.line("\t" + d.fn("end") + "(&ava_c);");
    if (has_ret)
      out.line("\treturn (" + fn.ret.spelling + ")(" + *fn.success + ");");
    else
      out.line("\treturn;");
  } else {
    out.line("\tif (" + d.fn("invoke") +
             "(&ava_c, &ava_a, sizeof(ava_a), (const void **)&ava_r, "
             "sizeof(*ava_r)) != 0)");
    out.line("\t\tgoto ava_fail;");
    for (const Param &p : fn.params) {
      if (p.info.role == Role::Buffer && p.info.may_out)
        out.line("\tif (ava_dir_" + p.name + " & AVA_BUF_OUT)\n\t\t" + d.fn("get_buffer") +
                 "(&ava_c, &ava_r->" + p.name + ", " + p.name + ", ava_count_" + p.name + " * " +
                 elem_size_expr(p) + ");");
    }
    out.line("\tif (ava_c.failed)");
    out.line("\t\tgoto ava_fail;");
    switch (fn.ret_info.role) {
    case Role::Scalar:
      out.line("\tava_ret = (" + fn.ret.spelling + ")ava_r->ret;");
      break;
    case Role::Float:
    case Role::Bytes:
      out.line(std::string("\tmemcpy(&ava_ret, ") + (fn.ret_info.role == Role::Float ? "&" : "") +
               "ava_r->ret, sizeof(ava_ret));");
      break;
    case Role::Handle:
    case Role::Opaque:
      out.line("\tava_ret = (" + fn.ret.spelling + ")(uintptr_t)ava_r->ret;");
      break;
    default:
      break;
    }
    const bool registers = std::any_of(fn.params.begin(), fn.params.end(), [](const Param &p) {
      return p.info.role == Role::Callback;
    });
    const std::string refused = refused_condition(fn);
    if (registers && !refused.empty() && !d.callbacks_unused.empty()) {
      // Refused by the API: its callbacks will never run.
      out.line("\tif (" + refused + ")");
      out.line("\t\t" + d.callbacks_unused + "(&ava_c);");
    }
    if (fn.success && has_ret) {
      out.line("\tif (ava_ret == (" + *fn.success + ")) {");
      out.line("\t\t" + d.s64 + " ava_async_value;");
      out.line("\t\tif (" + d.fn("take_async_error") + "(&ava_c, " + std::to_string(fn.ret_class) +
               "u, &ava_async_value)" + d.async_error_test + ")");
      out.line("\t\t\tava_ret = (" + fn.ret.spelling + ")ava_async_value;");
      out.line("\t}");
    }
    if (shaped && !d.shape_learn.empty()) {
      // Learned from this reply: later calls of the shape go without waiting.
      out.line(fn.success && has_ret ? "\tif (ava_ret == (" + *fn.success + "))"
                                     : std::string("\tif (1)"));
      out.line("\t\t" + d.shape_learn + "(" + d.context + ", " + shape_args + ");");
    }
    emit_released("\t",
                  fn.success && has_ret ? "ava_ret == (" + *fn.success + ")" : std::string("1"));
    out.line("\t" + d.fn("end") + "(&ava_c);");
    out.line(has_ret ? "\treturn ava_ret;" : "\treturn;");
  }
  out.line();
  out.line("ava_fail:");
  // The call did not run (or its reply was unusable): an output that holds
  // an error code says so instead of keeping what the caller left there.
  for (const Param &p : fn.params) {
    if (p.info.role != Role::Buffer || !p.info.may_out || p.info.may_in ||
        p.info.elem_error.empty())
      continue;
    out.line("\tif (ava_dir_" + p.name + " & AVA_BUF_OUT)");
    out.line("\t\tfor (" + d.u64 + " ava_i = 0; ava_i < ava_count_" + p.name + "; ava_i++)");
    out.line("\t\t\t" + p.name + "[ava_i] = (" + p.info.elem_type + ")(" + p.info.elem_error +
             ");");
  }
  out.line("\t" + d.fn("end") + "(&ava_c);");
  out.line("\t" + d.error_return(fn));
  out.line("}");
  out.line();
}

} // namespace cava
