// SPDX-License-Identifier: MIT
#include "cava/backends/common.hpp"

#include <algorithm>
#include <cctype>
#include <exception>

namespace cava {

void Emitter::line(const std::string &text) {
  text_ += text;
  text_ += '\n';
  lines_ += 1 + static_cast<unsigned>(std::count(text.begin(), text.end(), '\n'));
}

void Emitter::spec_code(const std::string &code, const Loc &loc) {
  if (!loc.file.empty())
    line("#line " + std::to_string(loc.line) + " \"" + loc.file + "\"");
  line(code);
  // lines_ counts lines written so far; the next one is lines_ + 1.
  line("#line " + std::to_string(lines_ + 2) + " \"" + file_name_ + "\"");
}

void emit_utility_code(Emitter &out, const Spec &spec, const std::string &where) {
  if (spec.utility.empty())
    return;
  out.line("/* Utility code of the spec (" + where + "). */");
  out.line("#pragma GCC diagnostic push");
  out.line("#pragma GCC diagnostic ignored \"-Wunused-function\"");
  out.line("#pragma GCC diagnostic ignored \"-Wunused-variable\"");
  for (const CodeRegion &r : spec.utility)
    out.spec_code(r.text, r.loc);
  out.line("#pragma GCC diagnostic pop");
  out.line();
}

void emit_hook(Emitter &out, const Spec &spec, const std::string &hook, const std::string &name) {
  auto it = spec.hooks.find(hook);
  if (it == spec.hooks.end())
    return;
  out.line("static void " + name + "(void)");
  out.line("{");
  out.spec_code("\t" + it->second.text + ";", it->second.loc);
  out.line("}");
  out.line();
}

std::string upper(const std::string &s) {
  std::string out = s;
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return out;
}

std::string prefix(const Spec &spec) {
  return "ava_" + spec.identifier;
}

std::string fn_id_macro(const Spec &spec, const Function &fn) {
  return "AVA_" + upper(spec.identifier) + "_FN_" + upper(fn.name);
}

std::string cb_id_macro(const Spec &spec, const Function &cb) {
  return cb_id_macro(spec, cb.name);
}

std::string cb_id_macro(const Spec &spec, const std::string &cb_name) {
  return "AVA_" + upper(spec.identifier) + "_CB_" + upper(cb_name);
}

std::string type_id_macro(const Spec &spec, uint32_t type_id) {
  std::string name = spec.handle_types.at(type_id - 1).name;
  for (char &c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)))
      c = '_';
  }
  return "AVA_" + upper(spec.identifier) + "_T_" + upper(name);
}

std::string call_struct(const Spec &spec, const Function &fn) {
  return "struct " + prefix(spec) + "_" + fn.name + "_call";
}

std::string reply_struct(const Spec &spec, const Function &fn) {
  return "struct " + prefix(spec) + "_" + fn.name + "_reply";
}

std::string cb_struct(const Spec &spec, const Function &cb) {
  return "struct " + prefix(spec) + "_cb_" + cb.name;
}

std::string refused_condition(const Function &fn) {
  if (fn.ret.kind == TypeInfo::Kind::Void)
    return "";
  if (fn.success)
    return "!(ava_ret == (" + *fn.success + "))";
  if (fn.ret_info.role == Role::Handle)
    return "ava_ret == NULL";
  return "";
}

std::string wire_header_name(const Spec &spec) {
  return spec.identifier + "_wire.h";
}

std::string declarator(const TypeInfo &t, const std::string &name) {
  const std::string &s = t.spelling;
  const size_t fp = s.find("(*)");
  if (fp != std::string::npos)
    return s.substr(0, fp) + "(*" + name + ")" + s.substr(fp + 3);
  if (!s.empty() && s.back() == '*')
    return s + name;
  // A parameter declared as an array ("void *[]", "int [4]"): write it as such.
  const size_t bracket = s.find('[');
  if (bracket != std::string::npos && s.back() == ']') {
    std::string base = s.substr(0, bracket);
    while (!base.empty() && base.back() == ' ')
      base.pop_back();
    return base + (base.back() == '*' ? "" : " ") + name + s.substr(bracket);
  }
  return s + " " + name;
}

std::string param_list(const Function &fn) {
  if (fn.params.empty())
    return fn.variadic ? "..." : "void";
  std::string out;
  for (size_t i = 0; i < fn.params.size(); ++i) {
    if (i)
      out += ", ";
    out += declarator(fn.params[i].type, fn.params[i].name);
  }
  if (fn.variadic)
    out += ", ...";
  return out;
}

std::string arg_list(const Function &fn) {
  std::string out;
  for (size_t i = 0; i < fn.params.size(); ++i) {
    if (i)
      out += ", ";
    out += fn.params[i].name;
  }
  return out;
}

std::string prototype(const Function &fn, const std::string &name) {
  return declarator(fn.ret, name + "(" + param_list(fn) + ")");
}

std::string elem_size_expr(const Param &p) {
  if (p.info.elem_type.empty())
    return "1";
  return "sizeof(" + p.info.elem_type + ")";
}

uint64_t round8(uint64_t n) {
  return (n + 7) & ~uint64_t{7};
}

namespace {

void eval_block(Emitter &out, const Block &block, const Param &p, const std::string &indent,
                const std::function<std::string(const std::string &)> &coupled_id) {
  const std::string &n = p.name;
  for (const Stmt &s : block.stmts) {
    switch (s.kind) {
    case Stmt::Kind::Annotation:
      switch (s.ann.kind) {
      case Ann::In:
        out.line(indent + "ava_dir_" + n + " |= AVA_BUF_IN;");
        break;
      case Ann::Out:
        out.line(indent + "ava_dir_" + n + " |= AVA_BUF_OUT;");
        break;
      case Ann::Buffer:
        out.line(indent + "ava_count_" + n + " = (uint64_t)(" +
                 (s.ann.args.empty() ? std::string("0") : s.ann.args[0]) + ");");
        break;
      case Ann::LifetimeCall:
        out.line(indent + "ava_life_" + n + " = AVA_LIFETIME_CALL;");
        break;
      case Ann::LifetimeManual:
        out.line(indent + "ava_life_" + n + " = AVA_LIFETIME_MANUAL;");
        break;
      case Ann::LifetimeStatic:
        out.line(indent + "ava_life_" + n + " = AVA_LIFETIME_STATIC;");
        break;
      case Ann::LifetimeOnce:
        out.line(indent + "ava_life_" + n + " = AVA_LIFETIME_ONCE;");
        break;
      case Ann::LifetimeCoupled:
        out.line(indent + "ava_life_" + n + " = AVA_LIFETIME_COUPLED;");
        out.line(indent + "ava_coupled_" + n + " = " +
                 coupled_id(s.ann.args.empty() ? std::string() : s.ann.args[0]) + ";");
        break;
      default:
        break; // static annotations shape the wire layout, not runtime state
      }
      break;
    case Stmt::Kind::If:
      out.line(indent + "if (" + s.cond + ") {");
      if (s.then_block)
        eval_block(out, *s.then_block, p, indent + "\t", coupled_id);
      if (s.else_block) {
        out.line(indent + "} else {");
        eval_block(out, *s.else_block, p, indent + "\t", coupled_id);
      }
      out.line(indent + "}");
      break;
    case Stmt::Kind::Element:
    case Stmt::Kind::Field:
      break;
    }
  }
}

bool has_lifetime(const Block &block) {
  for (const Stmt &s : block.stmts) {
    if (s.kind == Stmt::Kind::Annotation &&
        (s.ann.kind == Ann::LifetimeCoupled || s.ann.kind == Ann::LifetimeManual ||
         s.ann.kind == Ann::LifetimeStatic || s.ann.kind == Ann::LifetimeOnce))
      return true;
    if (s.kind == Stmt::Kind::If && ((s.then_block && has_lifetime(*s.then_block)) ||
                                     (s.else_block && has_lifetime(*s.else_block))))
      return true;
  }
  return false;
}

} // namespace

void emit_annotation_eval(Emitter &out, const Block &block, const Param &p,
                          const std::string &indent,
                          const std::function<std::string(const std::string &)> &coupled_id) {
  eval_block(out, block, p, indent, coupled_id);
}

bool block_has_lifetime(const Block &block) {
  return has_lifetime(block);
}

bool names_identifier(const std::string &text, const std::string &name) {
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1)) {
    const size_t end = at + name.size();
    if ((at == 0 || !ident(text[at - 1])) && (end == text.size() || !ident(text[end])))
      return true;
  }
  return false;
}

namespace {

// Whether no ava_buffer size in block names name; *any: there is one.
bool sizes_avoid(const Block &block, const std::string &name, bool *any) {
  for (const Stmt &s : block.stmts) {
    if (s.kind == Stmt::Kind::Annotation && s.ann.kind == Ann::Buffer) {
      *any = true;
      for (const std::string &a : s.ann.args)
        if (names_identifier(a, name))
          return false;
    } else if (s.kind == Stmt::Kind::If) {
      if ((s.then_block && !sizes_avoid(*s.then_block, name, any)) ||
          (s.else_block && !sizes_avoid(*s.else_block, name, any)))
        return false;
    }
  }
  return true;
}

} // namespace

bool callback_buffer_sized_by_others(const Param &p) {
  bool any = false;
  return p.info.role == Role::Buffer && sizes_avoid(p.block, p.name, &any) && any;
}

void emit_callback_size_check(Emitter &out, const Param &p, const std::string &indent,
                              const std::string &u32, const std::string &u64,
                              const std::string &fail) {
  const std::string &n = p.name;
  const std::string in = indent + "\t";
  out.line(indent + "if (" + n + " != NULL) {");
  out.line(in + u32 + " ava_dir_" + n + " = 0;");
  out.line(in + u64 + " ava_count_" + n + " = 0;");
  const bool life = block_has_lifetime(p.block);
  if (life) {
    out.line(in + u32 + " ava_life_" + n + " = 0;");
    out.line(in + u64 + " ava_coupled_" + n + " = 0;");
  }
  out.line();
  eval_block(out, p.block, p, in, [](const std::string &) { return "0"; });
  out.line(in + "(void)ava_dir_" + n + ";");
  if (life)
    out.line(in + "(void)ava_life_" + n + ";\n" + in + "(void)ava_coupled_" + n + ";");
  const std::string len = "ava_a->" + n + ".length";
  const std::string elem = elem_size_expr(p);
  // Divided, not multiplied: a count the worker chose cannot overflow.
  out.line(in + "if (" +
           (elem == "1"
                ? len + " != ava_count_" + n
                : len + " % " + elem + " != 0 || " + len + " / " + elem + " != ava_count_" + n) +
           ")");
  out.line(in + "\t" + fail);
  out.line(indent + "}");
}

uint64_t fnv1a(const std::string &text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

// A C integer literal ("64", "0x40u", "1ULL"); nullopt otherwise.
std::optional<uint64_t> int_literal(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.pop_back();
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
    s.erase(s.begin());
  while (s.size() > 1 && s.front() == '(' && s.back() == ')')
    s = s.substr(1, s.size() - 2);
  while (!s.empty() && (s.back() == 'u' || s.back() == 'U' || s.back() == 'l' || s.back() == 'L'))
    s.pop_back();
  if (s.empty())
    return std::nullopt;
  const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  const size_t start = hex ? 2 : 0;
  for (size_t i = start; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (!(hex ? std::isxdigit(c) : std::isdigit(c)))
      return std::nullopt;
  }
  try {
    return std::stoull(s.substr(start), nullptr, hex ? 16 : 10);
  } catch (const std::exception &) {
    return std::nullopt;
  }
}

void collect(const Block &block, Ann kind, std::vector<const Annotation *> *out) {
  for (const Stmt &s : block.stmts) {
    if (s.kind == Stmt::Kind::Annotation && s.ann.kind == kind)
      out->push_back(&s.ann);
    else if (s.kind == Stmt::Kind::If) {
      if (s.then_block)
        collect(*s.then_block, kind, out);
      if (s.else_block)
        collect(*s.else_block, kind, out);
    }
  }
}

std::string unquote(const std::string &s) {
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"')
    return s.substr(1, s.size() - 2);
  return s;
}

std::string res_macro(const Spec &spec, const std::string &name) {
  std::string n = name;
  for (char &c : n)
    if (!std::isalnum(static_cast<unsigned char>(c)))
      c = '_';
  return "AVA_" + upper(spec.identifier) + "_RES_" + upper(n);
}

bool amount_is_scalar_arg(const Function &fn, const std::string &amount, std::string *param) {
  std::string t = amount;
  t.erase(std::remove_if(t.begin(), t.end(), ::isspace), t.end());
  for (const Param &p : fn.params)
    if (t == p.name && p.info.role == Role::Scalar) {
      *param = p.name;
      return true;
    }
  return false;
}

std::vector<const Annotation *> resource_annotations(const Function &fn, Ann kind) {
  std::vector<const Annotation *> anns;
  collect(fn.ret_block, kind, &anns);
  for (const Param &p : fn.params)
    collect(p.block, kind, &anns);
  return anns;
}

} // namespace cava
