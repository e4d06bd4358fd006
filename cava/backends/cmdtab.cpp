// SPDX-License-Identifier: MIT
// Backend: the command table (<id>_cmds.h, struct layout in
// include/ava/cmdtab.h). It restates the spec's static facts about each call
// (class, block sizes, buffer descriptors and bounds, resources) for code that
// polices traffic without running generated code: ava.ko and the host.
#include <algorithm>
#include <cctype>
#include <exception>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cava/backends/backends.hpp"
#include "cava/backends/common.hpp"

namespace cava {
namespace {

bool has_if(const Block &block) {
  for (const Stmt &s : block.stmts)
    if (s.kind == Stmt::Kind::If)
      return true;
  return false;
}

// The bytes a buffer holds at most when every ava_buffer(n) of it is the same literal.
std::optional<uint64_t> static_bound(const Param &p) {
  std::vector<const Annotation *> bufs;
  collect(p.block, Ann::Buffer, &bufs);
  if (bufs.empty())
    return std::nullopt;
  std::optional<uint64_t> count;
  for (const Annotation *a : bufs) {
    const auto n = a->args.empty() ? std::nullopt : int_literal(a->args[0]);
    if (!n || (count && *count != *n))
      return std::nullopt;
    count = n;
  }
  return *count * p.info.elem_size;
}

class TableGen {
public:
  explicit TableGen(const Spec &spec) : spec_(spec), p_(prefix(spec)), out_("") {}
  std::string run();

private:
  void resources_of(const Function &fn);
  std::string desc(const Function &fn);

  const Spec &spec_;
  std::string p_;
  Emitter out_;
  std::vector<std::string> bufs_;
  std::vector<std::string> res_;
  std::map<std::string, uint32_t> res_ids_;
  std::vector<std::string> res_names_;
};

void TableGen::resources_of(const Function &fn) {
  struct Src {
    const Block *block;
    Ann kind;
    const char *c_kind;
  };
  std::vector<Src> srcs = {{&fn.block, Ann::ConsumesResource, "AVA_CMD_RES_CONSUMES"},
                           {&fn.ret_block, Ann::AllocatesResource, "AVA_CMD_RES_ALLOCATES"},
                           {&fn.ret_block, Ann::DeallocatesResource, "AVA_CMD_RES_DEALLOCATES"}};
  for (const Param &p : fn.params) {
    srcs.push_back({&p.block, Ann::AllocatesResource, "AVA_CMD_RES_ALLOCATES"});
    srcs.push_back({&p.block, Ann::DeallocatesResource, "AVA_CMD_RES_DEALLOCATES"});
  }
  for (const Src &src : srcs) {
    std::vector<const Annotation *> anns;
    collect(*src.block, src.kind, &anns);
    for (const Annotation *a : anns) {
      const std::string name = a->args.empty() ? std::string("?") : unquote(a->args[0]);
      auto [it, fresh] = res_ids_.emplace(name, static_cast<uint32_t>(res_names_.size()));
      if (fresh)
        res_names_.push_back(name);
      const std::string amount = a->args.size() > 1 ? a->args[1] : "1";
      std::string flags = "AVA_CMD_RES_DYNAMIC", offset = "0", value = "0ull", param;
      if (const auto n = int_literal(amount)) {
        flags = "AVA_CMD_RES_CONST";
        value = std::to_string(*n) + "ull";
      } else if (amount_is_scalar_arg(fn, amount, &param)) {
        flags = "AVA_CMD_RES_ARG";
        offset = "offsetof(" + call_struct(spec_, fn) + ", " + param + ")";
        value = "1ull";
      }
      res_.push_back("\t{" + res_macro(spec_, name) + ", " + src.c_kind + ", " + flags + ", " +
                     offset + ", " + value + "}, /* " + fn.name + " */");
    }
  }
}

std::string TableGen::desc(const Function &fn) {
  const size_t buf_first = bufs_.size(), res_first = res_.size();
  std::string flags;
  auto add = [&](const char *f) { flags += (flags.empty() ? "" : " | ") + std::string(f); };
  if (!fn.unsupported) {
    add("AVA_CMD_SUPPORTED");
    add(fn.async_if ? "AVA_CMD_COND_ASYNC" : fn.async ? "AVA_CMD_ASYNC" : "AVA_CMD_SYNC");
    if (fn.flush)
      add("AVA_CMD_FLUSH");
    if (fn.callback_param >= 0)
      add("AVA_CMD_CALLBACK");
    bool allocates = fn.ret_info.allocates, deallocates = false;
    for (const Param &p : fn.params) {
      allocates = allocates || p.info.allocates || p.info.elem_allocates;
      deallocates = deallocates || p.info.deallocates;
    }
    if (allocates)
      add("AVA_CMD_ALLOCATES");
    if (deallocates)
      add("AVA_CMD_DEALLOCATES");
    if (kernel_exclusion_reason(spec_, fn).empty())
      add("AVA_CMD_KERNEL");
    for (const Param &p : fn.params) {
      if (p.info.role != Role::Buffer)
        continue;
      std::string bf;
      auto badd = [&](const char *f) { bf += (bf.empty() ? "" : " | ") + std::string(f); };
      if (p.info.may_in || p.info.default_in)
        badd("AVA_CMD_BUF_IN");
      if (p.info.may_out)
        badd("AVA_CMD_BUF_OUT");
      if (has_if(p.block) && p.info.may_out && (p.info.may_in || p.info.default_in))
        badd("AVA_CMD_BUF_DIR_COND");
      if (p.info.elem_handle_type)
        badd("AVA_CMD_BUF_HANDLES");
      if (p.info.zerocopy)
        badd("AVA_CMD_BUF_ZEROCOPY");
      const auto bound = static_bound(p);
      if (bound)
        badd("AVA_CMD_BUF_BOUNDED");
      const std::string reply_off =
          p.info.may_out && !fn.async ? "offsetof(" + reply_struct(spec_, fn) + ", " + p.name + ")"
                                      : std::string("AVA_CMD_NO_OFFSET");
      bufs_.push_back("\t{offsetof(" + call_struct(spec_, fn) + ", " + p.name + "), " + reply_off +
                      ",\n\t " + (bf.empty() ? std::string("0") : bf) + ", " +
                      std::to_string(p.info.elem_size) + ", " +
                      (bound ? std::to_string(*bound) : std::string("0")) + "ull}, /* " + fn.name +
                      "(" + p.name + ") */");
    }
    resources_of(fn);
  }
  const std::string args = fn.unsupported ? "0" : "sizeof(" + call_struct(spec_, fn) + ")";
  const std::string reply =
      fn.unsupported || fn.async ? "0" : "sizeof(" + reply_struct(spec_, fn) + ")";
  return "\t{\"" + fn.name + "\", " + fn_id_macro(spec_, fn) + ",\n\t " +
         (flags.empty() ? std::string("0") : flags) + ",\n\t " + args + ", " + reply + ", " +
         std::to_string(fn.ret_class) + "u, " + std::to_string(buf_first) + ", " +
         std::to_string(bufs_.size() - buf_first) + ", " + std::to_string(res_first) + ", " +
         std::to_string(res_.size() - res_first) + ", 0},";
}

std::string TableGen::run() {
  std::vector<std::string> descs;
  for (const Function &fn : spec_.functions)
    descs.push_back(desc(fn));
  const std::string up = upper(spec_.identifier);
  const std::string unused = " __attribute__((unused))";
  out_.line(banner(spec_));
  out_.line("/*");
  out_.line(" * Command table of spec \"" + spec_.name +
            "\" (struct layout: include/ava/cmdtab.h), indexed");
  out_.line(" * by function id. Kernel and user space; each entry's sizes and offsets come");
  out_.line(" * from the structs of " + wire_header_name(spec_) + ".");
  out_.line(" */");
  out_.line("#ifndef AVA_" + up + "_CMDS_H");
  out_.line("#define AVA_" + up + "_CMDS_H");
  out_.line();
  out_.line("#include \"ava/cmdtab.h\"");
  out_.line("#include \"" + wire_header_name(spec_) + "\"");
  out_.line();
  out_.line("/* Resource classes (ava_allocates_resource and friends). */");
  for (size_t i = 0; i < res_names_.size(); ++i)
    out_.line("#define " + res_macro(spec_, res_names_[i]) + " " + std::to_string(i) + "u");
  out_.line("#define AVA_" + up + "_NRESOURCES " + std::to_string(res_names_.size()) + "u");
  out_.line();
  out_.line("static const char *const " + p_ + "_cmd_resource_names[]" + unused + " = {");
  for (const std::string &n : res_names_)
    out_.line("\t\"" + n + "\",");
  out_.line("\t0 /* end */");
  out_.line("};");
  out_.line();
  out_.line("/* {args_offset, reply_offset, flags, elem_size, max_len}; a zero entry ends it. */");
  out_.line("static const struct ava_cmd_buf " + p_ + "_cmd_bufs[]" + unused + " = {");
  for (const std::string &b : bufs_)
    out_.line(b);
  out_.line("\t{0, 0, 0, 0, 0ull}");
  out_.line("};");
  out_.line();
  out_.line("/* {resource, kind, flags, arg_offset, amount}; a zero entry ends it. */");
  out_.line("static const struct ava_cmd_res " + p_ + "_cmd_res[]" + unused + " = {");
  for (const std::string &r : res_)
    out_.line(r);
  out_.line("\t{0, 0, 0, 0, 0ull}");
  out_.line("};");
  out_.line();
  out_.line("/*");
  out_.line(" * {name, id, flags, args_len, reply_len, ret_class, buf_first, buf_count,");
  out_.line(" *  res_first, res_count, reserved}");
  out_.line(" */");
  out_.line("static const struct ava_cmd_desc " + p_ + "_cmds[]" + unused + " = {");
  out_.line("\t{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, /* id 0 is never used */");
  for (const std::string &d : descs)
    out_.line(d);
  out_.line("};");
  out_.line("AVA_STATIC_ASSERT(sizeof(" + p_ + "_cmds) / sizeof(" + p_ + "_cmds[0]) == AVA_" + up +
            "_NFUNCS,");
  out_.line("\t\t  \"" + p_ + "_cmds has one entry per function id\");");
  out_.line();
  out_.line("static const struct ava_cmd_table " + p_ + "_cmd_table" + unused + " = {");
  out_.line("\tAVA_" + up + "_SPEC_NAME, AVA_" + up + "_SPEC_HASH, AVA_" + up + "_SPEC_ID, AVA_" +
            up + "_NFUNCS,");
  out_.line("\t" + p_ + "_cmds, " + p_ + "_cmd_bufs, " + p_ + "_cmd_res, " + p_ +
            "_cmd_resource_names,");
  out_.line("\t" + std::to_string(bufs_.size()) + "u, " + std::to_string(res_.size()) + "u, AVA_" +
            up + "_NRESOURCES, 0u");
  out_.line("};");
  out_.line();
  out_.line("#endif /* AVA_" + up + "_CMDS_H */");
  return out_.text();
}

} // namespace

std::string generate_command_table(const Spec &spec) {
  TableGen gen(spec);
  return gen.run();
}

} // namespace cava
