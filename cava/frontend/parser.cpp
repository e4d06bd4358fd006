// SPDX-License-Identifier: MIT
#include "cava/frontend/parser.hpp"

#include <clang-c/Index.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include "cava/frontend/clang_util.hpp"
#include "cava/frontend/source_text.hpp"

namespace cava {
namespace {

struct Region {
  std::string file; // the spec file (main file or part) it lies in
  size_t begin = 0; // offset past the begin marker's ';'
  size_t end = 0;   // offset of the end marker
  Loc loc;
};

// A spec part: spec text in another file, included by the spec as
// #include "name.spec.inc" (annotations, functions, regions, as in the spec).
bool is_spec_part(const std::string &spelled) {
  const std::string suffix = ".spec.inc";
  return spelled.size() > suffix.size() &&
         spelled.compare(spelled.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Text of a C string literal sequence ("a" "b"); escapes kept as written
// except \" and \\ which are resolved, which is all specs need.
std::string unquote(const std::string &text, bool *ok) {
  std::string out;
  *ok = false;
  size_t i = 0;
  bool any = false;
  while (i < text.size()) {
    if (std::isspace(static_cast<unsigned char>(text[i]))) {
      ++i;
      continue;
    }
    if (text[i] != '"')
      return {};
    ++i;
    while (i < text.size() && text[i] != '"') {
      if (text[i] == '\\' && i + 1 < text.size()) {
        const char n = text[i + 1];
        out += (n == 'n') ? '\n' : (n == 't') ? '\t' : n;
        i += 2;
        continue;
      }
      out += text[i++];
    }
    if (i >= text.size())
      return {};
    ++i;
    any = true;
  }
  *ok = any;
  return out;
}

class Parser {
public:
  Parser(const ParseOptions &options, Diagnostics &diag, Spec *spec)
      : options_(options), diag_(diag), spec_(spec) {}
  ~Parser() {
    if (tu_)
      clang_disposeTranslationUnit(tu_);
    if (index_)
      clang_disposeIndex(index_);
  }
  Parser(const Parser &) = delete;
  Parser &operator=(const Parser &) = delete;

  bool run();

private:
  Loc loc_of(CXCursor c) const;
  size_t offset_of(CXCursor c) const;
  // Spec files: the main file and the parts it includes ("x.spec.inc"),
  // whose text cava reads; everything else is an API or system header.
  bool in_spec_file(CXCursor c) const;
  const SourceText *text_for(CXFile f) const;
  const SourceText &src_of(CXCursor c) const;
  std::string file_of(CXCursor c) const;
  bool add_part(CXFile f, const std::string &spelled);
  bool report_clang_diagnostics();
  void collect_top_level(const std::vector<CXCursor> &top);
  void handle_marker_var(CXCursor c, const std::string &name);
  void handle_function(CXCursor c, const std::string &name);
  void handle_special_function(CXCursor c, const std::string &name);
  bool in_region(const std::vector<Region> &regions, const std::string &file, size_t offset) const;
  Function make_function(CXCursor c, const std::string &name, bool in_spec);
  void parse_body(CXCursor body, Function *fn);
  void parse_block_stmt(CXCursor stmt, Block *block, const std::string &where);
  void parse_block(CXCursor stmt, Block *block, const std::string &where);
  bool annotation_of(CXCursor call, Annotation *ann);
  bool add_code(CXCursor stmt, Function *fn);
  void collect_api_functions(const std::vector<CXCursor> &top);
  bool is_lone_async(CXCursor then);
  bool invocation_at(CXCursor c, std::string *name, std::vector<std::string> *args);

  const ParseOptions &options_;
  Diagnostics &diag_;
  Spec *spec_;
  CXIndex index_ = nullptr;
  CXTranslationUnit tu_ = nullptr;
  CXFile main_file_ = nullptr;
  std::map<std::string, std::unique_ptr<SourceText>> texts_; // by clang's file name
  std::vector<Region> utility_;
  std::vector<Region> replacement_;
  std::vector<std::string> api_headers_;
  std::set<std::string> defined_;
};

Loc Parser::loc_of(CXCursor c) const {
  const Pos p = expansion_pos(clang_getCursorLocation(c));
  if (const SourceText *t = text_for(p.file))
    return t->loc_at(p.offset);
  return Loc{to_string(clang_getFileName(p.file)), p.line, p.col};
}

const SourceText *Parser::text_for(CXFile f) const {
  if (!f)
    return nullptr;
  auto it = texts_.find(to_string(clang_getFileName(f)));
  return it == texts_.end() ? nullptr : it->second.get();
}

std::string Parser::file_of(CXCursor c) const {
  const Pos p = expansion_pos(clang_getRangeStart(clang_getCursorExtent(c)));
  return p.file ? to_string(clang_getFileName(p.file)) : std::string();
}

// Only called for cursors in_spec_file() accepted.
const SourceText &Parser::src_of(CXCursor c) const {
  auto it = texts_.find(file_of(c));
  return it != texts_.end() ? *it->second : *texts_.begin()->second;
}

bool Parser::add_part(CXFile f, const std::string &spelled) {
  const std::string path = to_string(clang_getFileName(f));
  if (texts_.count(path))
    return true;
  // Shown next to the main spec, as the spec wrote it.
  const std::string &main = options_.shown_name;
  const size_t slash = main.rfind('/');
  const std::string shown = (slash == std::string::npos ? "" : main.substr(0, slash + 1)) + spelled;
  auto text = std::make_unique<SourceText>();
  if (!text->load(path, shown))
    return false;
  texts_.emplace(path, std::move(text));
  return true;
}

size_t Parser::offset_of(CXCursor c) const {
  return expansion_pos(clang_getRangeStart(clang_getCursorExtent(c))).offset;
}

bool Parser::in_spec_file(CXCursor c) const {
  const Pos p = expansion_pos(clang_getCursorLocation(c));
  return text_for(p.file) != nullptr;
}

bool Parser::invocation_at(CXCursor c, std::string *name, std::vector<std::string> *args) {
  bool parens = false;
  size_t end = 0;
  return src_of(c).invocation(offset_of(c), name, args, &parens, &end);
}

bool Parser::report_clang_diagnostics() {
  bool ok = true;
  const unsigned n = clang_getNumDiagnostics(tu_);
  for (unsigned i = 0; i < n; ++i) {
    CXDiagnostic d = clang_getDiagnostic(tu_, i);
    const CXDiagnosticSeverity sev = clang_getDiagnosticSeverity(d);
    if (sev >= CXDiagnostic_Error) {
      const Pos p = expansion_pos(clang_getDiagnosticLocation(d));
      Loc loc;
      if (const SourceText *t = text_for(p.file))
        loc = t->loc_at(p.offset);
      else if (p.file)
        loc = Loc{to_string(clang_getFileName(p.file)), p.line, p.col};
      diag_.error(loc, to_string(clang_getDiagnosticSpelling(d)));
      ok = false;
    }
    clang_disposeDiagnostic(d);
  }
  return ok;
}

bool Parser::in_region(const std::vector<Region> &regions, const std::string &file,
                       size_t offset) const {
  return std::any_of(regions.begin(), regions.end(), [&](const Region &r) {
    return r.file == file && offset >= r.begin && offset < r.end;
  });
}

bool Parser::run() {
  auto main_text = std::make_unique<SourceText>();
  if (!main_text->load(options_.spec_path, options_.shown_name)) {
    diag_.error(Loc{}, "cannot read spec file '" + options_.spec_path + "'");
    return false;
  }
  spec_->source_file = options_.spec_path;
  spec_->source_name = options_.shown_name;
  spec_->loc = Loc{options_.shown_name, 1, 1};

  std::vector<const char *> argv;
  // -w: spec bodies are annotation lists, not real implementations, so
  // "missing return" and similar warnings are noise.
  static const char *const kFixed[] = {"-x", "c", "-std=gnu11", "-w", "-ferror-limit=50"};
  for (const char *a : kFixed)
    argv.push_back(a);
  for (const auto &a : options_.clang_args)
    argv.push_back(a.c_str());

  index_ = clang_createIndex(0, 0);
  const CXErrorCode rc = clang_parseTranslationUnit2(
      index_, options_.spec_path.c_str(), argv.data(), static_cast<int>(argv.size()), nullptr, 0,
      CXTranslationUnit_DetailedPreprocessingRecord, &tu_);
  if (rc != CXError_Success || !tu_) {
    diag_.error(Loc{options_.shown_name, 1, 1}, "libclang could not parse the spec (error " +
                                                    std::to_string(static_cast<int>(rc)) + ")");
    return false;
  }
  main_file_ = clang_getFile(tu_, options_.spec_path.c_str());
  if (main_file_)
    texts_.emplace(to_string(clang_getFileName(main_file_)), std::move(main_text));
  // Parts first, so that diagnostics in them point at their lines.
  for (CXCursor c : children_of(clang_getTranslationUnitCursor(tu_))) {
    if (clang_getCursorKind(c) != CXCursor_InclusionDirective || !in_spec_file(c))
      continue;
    const std::string spelled = to_string(clang_getCursorSpelling(c));
    CXFile f = clang_getIncludedFile(c);
    if (f && is_spec_part(spelled) && !add_part(f, spelled))
      diag_.error(loc_of(c), "cannot read spec part '" + spelled + "'");
  }
  if (!report_clang_diagnostics())
    return false;

  const std::vector<CXCursor> top = children_of(clang_getTranslationUnitCursor(tu_));
  collect_top_level(top);
  collect_api_functions(top);
  return !diag_.has_errors();
}

void Parser::collect_top_level(const std::vector<CXCursor> &top) {
  // Pass 1: inclusion directives, API-level declarations and region markers.
  std::vector<std::tuple<std::string, size_t, std::string>> markers; // file, offset, name
  std::vector<CXCursor> includes;
  bool seen_spec_h = false;
  for (CXCursor c : top) {
    if (!in_spec_file(c))
      continue;
    const SourceText &src = src_of(c);
    const CXCursorKind kind = clang_getCursorKind(c);
    if (kind == CXCursor_MacroDefinition && !seen_spec_h) {
      // Configuration of the API headers (CL_TARGET_OPENCL_VERSION, ...):
      // the generated code must see the headers the way the spec did.
      size_t begin = offset_of(c);
      while (begin > 0 && src.text()[begin - 1] != '\n')
        --begin;
      size_t end = begin;
      while (end < src.text().size() && src.text()[end] != '\n')
        end += src.text()[end] == '\\' && end + 1 < src.text().size() ? 2 : 1;
      spec_->includes.push_back(trim(src.slice(begin, end)));
      continue;
    }
    if (kind == CXCursor_InclusionDirective) {
      const std::string included = to_string(clang_getCursorSpelling(c));
      if (included == "ava/spec.h") {
        seen_spec_h = true;
        continue;
      }
      if (is_spec_part(included))
        continue; // its contents are the spec's own
      // Decided once the regions are known: an include inside utility or
      // replacement code belongs to that code, not to the API.
      includes.push_back(c);
      continue;
    }
    if (kind == CXCursor_VarDecl) {
      const std::string name = to_string(clang_getCursorSpelling(c));
      if (name.rfind("__ava_begin_", 0) == 0 || name.rfind("__ava_end_", 0) == 0) {
        markers.emplace_back(file_of(c), offset_of(c), name);
      } else if (name.rfind("__ava_", 0) == 0) {
        handle_marker_var(c, name);
      }
    }
  }
  // Regions: begin/end markers must pair up in order. Cursors come in the
  // translation unit's order, parts where the spec includes them, so
  // regions keep the order in which the spec reads.
  const Region *open = nullptr;
  std::string open_kind;
  Region current;
  for (const auto &[file, off, name] : markers) {
    const bool begin = name.rfind("__ava_begin_", 0) == 0;
    const std::string kind = name.find("utility") != std::string::npos ? "utility" : "replacement";
    const SourceText &src = *texts_.at(file);
    const Loc loc = src.loc_at(off);
    if (open && current.file != file) {
      diag_.error(current.loc, "ava_begin_" + open_kind + " is never closed by ava_end_" +
                                   open_kind + " in its file");
      open = nullptr;
    }
    if (begin) {
      if (open) {
        diag_.error(loc, "ava_begin_" + kind + " inside an open ava_begin_" + open_kind);
        continue;
      }
      size_t semi = src.text().find(';', off);
      current = Region{file, semi == std::string::npos ? off : semi + 1, 0, loc};
      open = &current;
      open_kind = kind;
    } else {
      if (!open || open_kind != kind) {
        diag_.error(loc, "ava_end_" + kind + " without a matching ava_begin_" + kind);
        continue;
      }
      current.end = off;
      CodeRegion code{src.slice(current.begin, current.end), src.loc_at(current.begin)};
      if (kind == "utility") {
        utility_.push_back(current);
        spec_->utility.push_back(code);
      } else {
        replacement_.push_back(current);
        spec_->replacement.push_back(code);
      }
      open = nullptr;
    }
  }
  if (open)
    diag_.error(current.loc, "ava_begin_" + open_kind + " is never closed by ava_end_" + open_kind);

  for (CXCursor c : includes) {
    const size_t off = offset_of(c);
    const std::string file = file_of(c);
    if (in_region(utility_, file, off) || in_region(replacement_, file, off))
      continue;
    const SourceText &src = src_of(c);
    const size_t line_end = src.text().find('\n', off);
    spec_->includes.push_back(trim(src.slice(off, line_end)));
    CXFile f = clang_getIncludedFile(c);
    if (f)
      api_headers_.push_back(to_string(clang_getFileName(f)));
  }

  // Pass 2: functions.
  for (CXCursor c : top) {
    if (!in_spec_file(c) || clang_getCursorKind(c) != CXCursor_FunctionDecl)
      continue;
    const std::string name = to_string(clang_getCursorSpelling(c));
    const size_t off = offset_of(c);
    const std::string file = file_of(c);
    if (in_region(utility_, file, off))
      continue;
    if (in_region(replacement_, file, off)) {
      // Static helpers of replacement code are not part of the API.
      if (clang_isCursorDefinition(c) && clang_getCursorLinkage(c) == CXLinkage_External) {
        spec_->replacement_functions.push_back(name);
        defined_.insert(name);
      }
      continue;
    }
    if (name.rfind("__ava_", 0) == 0) {
      handle_special_function(c, name);
      continue;
    }
    handle_function(c, name);
  }
}

void Parser::handle_marker_var(CXCursor c, const std::string &name) {
  std::string macro;
  std::vector<std::string> args;
  const Loc loc = loc_of(c);
  if (!invocation_at(c, &macro, &args) || args.empty()) {
    diag_.error(loc, "cannot read the arguments of " + name.substr(2));
    return;
  }
  auto string_arg = [&](std::string *out) {
    bool ok = false;
    *out = unquote(args[0], &ok);
    if (!ok)
      diag_.error(loc, macro + " takes a string literal");
  };
  if (name == "__ava_name") {
    string_arg(&spec_->name);
  } else if (name == "__ava_version") {
    string_arg(&spec_->version);
  } else if (name.rfind("__ava_identifier_", 0) == 0) {
    spec_->identifier = args[0];
  } else if (name == "__ava_number") {
    char *end = nullptr;
    const unsigned long v = std::strtoul(args[0].c_str(), &end, 0);
    if (!end || *end != '\0' || v == 0 || v > 0xffffu)
      diag_.error(loc, "ava_number takes an integer literal between 1 and 65535");
    spec_->number = static_cast<uint32_t>(v);
  } else if (name.rfind("__ava_soname_", 0) == 0) {
    std::string s;
    string_arg(&s);
    spec_->sonames.push_back(s);
  } else if (name == "__ava_libs") {
    string_arg(&spec_->libs);
  } else if (name == "__ava_cflags") {
    string_arg(&spec_->cflags);
  } else if (name == "__ava_export_qualifier") {
    spec_->export_qualifier = args[0];
  } else if (name.rfind("__ava_export_version_", 0) == 0) {
    ExportVersion v;
    v.loc = loc;
    bool ok = false;
    v.node = unquote(args[0], &ok);
    if (!ok || v.node.empty())
      diag_.error(loc, "ava_export_version takes a version node name (a string literal) first");
    for (size_t i = 1; i < args.size(); ++i)
      v.functions.push_back(args[i]);
    spec_->export_versions.push_back(std::move(v));
  } else {
    // ava_guestlib_srcs, ava_worker_srcs, ava_register_metadata, resources:
    // parsed, but no backend implements them yet.
    diag_.error(loc, macro + " is not implemented by cava's backends yet");
  }
}

void Parser::handle_special_function(CXCursor c, const std::string &name) {
  const Loc loc = loc_of(c);
  static const char *const kHooks[] = {"guestlib_init_prologue", "guestlib_init_epilogue",
                                       "guestlib_fini_prologue", "guestlib_fini_epilogue",
                                       "worker_init_epilogue"};
  for (const char *h : kHooks) {
    if (name == std::string("__ava_") + h) {
      std::string macro;
      std::vector<std::string> args;
      if (!invocation_at(c, &macro, &args)) {
        diag_.error(loc, "cannot read the code of ava_" + std::string(h));
        return;
      }
      std::string code;
      for (size_t i = 0; i < args.size(); ++i)
        code += (i ? ", " : "") + args[i];
      spec_->hooks[h] = CodeRegion{code, loc};
      return;
    }
  }
  CXCursor body = clang_getNullCursor();
  for (CXCursor ch : children_of(c)) {
    if (clang_getCursorKind(ch) == CXCursor_CompoundStmt)
      body = ch;
  }
  if (name.rfind("__ava_type_", 0) == 0) {
    if (clang_Cursor_getNumArguments(c) != 1 || clang_Cursor_isNull(body)) {
      diag_.error(loc, "malformed ava_type");
      return;
    }
    TypeRule rule;
    rule.type = unqualified(
        to_string(clang_getTypeSpelling(clang_getCursorType(clang_Cursor_getArgument(c, 0)))));
    rule.loc = loc;
    parse_block(body, &rule.block, "ava_type(" + rule.type + ")");
    spec_->type_rules.push_back(std::move(rule));
    return;
  }
  if (name.rfind("__ava_defaults_", 0) == 0 && !clang_Cursor_isNull(body)) {
    Function fn;
    fn.name = "ava_defaults";
    parse_body(body, &fn);
    if (!fn.params.empty() || !fn.code.empty())
      diag_.error(loc, "ava_defaults may only hold function-level annotations");
    spec_->defaults = fn.block;
    return;
  }
  // Marker functions declared by ava/spec.h live in the header, not here.
  diag_.error(loc, "identifiers starting with __ava_ are reserved for ava");
}

Function Parser::make_function(CXCursor c, const std::string &name, bool in_spec) {
  Function fn;
  fn.name = name;
  fn.loc = loc_of(c);
  fn.in_spec = in_spec;
  const CXType t = clang_getCursorType(c);
  fn.ret = type_info(clang_getResultType(t));
  fn.variadic = clang_isFunctionTypeVariadic(t) != 0;
  const int n = clang_Cursor_getNumArguments(c);
  for (int i = 0; i < n; ++i) {
    CXCursor p = clang_Cursor_getArgument(c, i);
    Param param;
    param.name = to_string(clang_getCursorSpelling(p));
    param.type = type_info(clang_getCursorType(p));
    param.loc = loc_of(p);
    if (param.name.empty())
      param.name = "ava_arg" + std::to_string(i);
    fn.params.push_back(std::move(param));
  }
  return fn;
}

void Parser::handle_function(CXCursor c, const std::string &name) {
  if (!clang_isCursorDefinition(c))
    return; // a prototype; the API headers provide those
  Function fn = make_function(c, name, true);
  for (CXCursor ch : children_of(c)) {
    if (clang_getCursorKind(ch) == CXCursor_AnnotateAttr &&
        to_string(clang_getCursorSpelling(ch)) == "ava_callback_decl")
      fn.is_callback_decl = true;
  }
  for (CXCursor ch : children_of(c)) {
    if (clang_getCursorKind(ch) == CXCursor_CompoundStmt)
      parse_body(ch, &fn);
  }
  if (!defined_.insert(name).second) {
    diag_.error(fn.loc, "function " + name + " is defined twice in the spec");
    return;
  }
  if (fn.is_callback_decl)
    spec_->callbacks.push_back(std::move(fn));
  else
    spec_->functions.push_back(std::move(fn));
}

bool Parser::annotation_of(CXCursor call, Annotation *ann) {
  const std::string marker = to_string(clang_getCursorSpelling(call));
  const auto kind = ann_from_marker(marker);
  ann->loc = loc_of(call);
  if (!kind) {
    diag_.error(ann->loc, "unknown annotation " + marker.substr(2));
    return false;
  }
  ann->kind = *kind;
  std::string macro;
  if (!invocation_at(call, &macro, &ann->args)) {
    diag_.error(ann->loc, "cannot read the arguments of " + std::string(ann_name(*kind)));
    return false;
  }
  return true;
}

void Parser::parse_block(CXCursor stmt, Block *block, const std::string &where) {
  if (clang_getCursorKind(stmt) == CXCursor_CompoundStmt) {
    for (CXCursor ch : children_of(stmt))
      parse_block_stmt(ch, block, where);
  } else {
    parse_block_stmt(stmt, block, where);
  }
}

void Parser::parse_block_stmt(CXCursor stmt, Block *block, const std::string &where) {
  const CXCursorKind kind = clang_getCursorKind(stmt);
  const Loc loc = loc_of(stmt);
  if (kind == CXCursor_NullStmt)
    return;
  if (kind == CXCursor_CompoundStmt) {
    parse_block(stmt, block, where);
    return;
  }
  CXCursor call = find_call(stmt);
  if (kind != CXCursor_IfStmt && !clang_Cursor_isNull(call) &&
      to_string(clang_getCursorSpelling(call)).rfind("__ava_", 0) == 0) {
    Stmt s;
    s.kind = Stmt::Kind::Annotation;
    s.loc = loc;
    if (annotation_of(call, &s.ann))
      block->stmts.push_back(std::move(s));
    return;
  }
  if (kind == CXCursor_IfStmt) {
    const std::vector<CXCursor> parts = children_of(stmt);
    if (parts.size() < 2) {
      diag_.error(loc, "malformed if in " + where);
      return;
    }
    CXCursor cond_call = find_call(parts[0]);
    const std::string cond_name =
        clang_Cursor_isNull(cond_call) ? "" : to_string(clang_getCursorSpelling(cond_call));
    Stmt s;
    s.loc = loc;
    s.then_block = std::make_shared<Block>();
    if (cond_name == "__ava_element" || cond_name == "__ava_field") {
      s.kind = cond_name == "__ava_element" ? Stmt::Kind::Element : Stmt::Kind::Field;
      if (s.kind == Stmt::Kind::Field) {
        std::string macro;
        std::vector<std::string> args;
        invocation_at(stmt, &macro, &args);
        s.field = args.empty() ? "" : args[0];
      }
      parse_block(parts[1], s.then_block.get(), where + " element");
    } else if (cond_name == "__ava_argument" || cond_name == "__ava_return_value") {
      diag_.error(loc, "ava_argument and ava_return_value cannot be nested in " + where);
      return;
    } else {
      s.kind = Stmt::Kind::If;
      size_t end = 0;
      if (!src_of(stmt).parenthesized_after_word(offset_of(stmt), &s.cond, &end)) {
        diag_.error(loc, "cannot read the condition of this if");
        return;
      }
      parse_block(parts[1], s.then_block.get(), where);
      if (parts.size() > 2) {
        s.else_block = std::make_shared<Block>();
        parse_block(parts[2], s.else_block.get(), where);
      }
    }
    block->stmts.push_back(std::move(s));
    return;
  }
  diag_.error(loc, "only annotations and if statements may appear in " + where);
}

bool Parser::add_code(CXCursor stmt, Function *fn) {
  const Loc loc = loc_of(stmt);
  bool has_execute = false;
  std::string bad;
  for_each_call(stmt, [&](const std::string &callee) {
    if (callee == "__ava_execute")
      has_execute = true;
    else if (callee == "__ava_handle_object" || callee == "__ava_handle_id" ||
             callee == "__ava_handle_invalid" || callee == "__ava_handle_held")
      return; // helpers for worker code, not annotations
    else if (callee.rfind("__ava_", 0) == 0 && bad.empty())
      bad = callee.substr(2);
  });
  if (!bad.empty()) {
    diag_.error(loc, "annotation " + bad +
                         " cannot appear inside code; use if (...) { ... } inside ava_argument");
    return false;
  }
  const SourceText &src = src_of(stmt);
  const CXSourceRange r = clang_getCursorExtent(stmt);
  size_t begin = expansion_pos(clang_getRangeStart(r)).offset;
  // Keep the first line's indentation so the copied code reads as written.
  while (begin > 0 && (src.text()[begin - 1] == ' ' || src.text()[begin - 1] == '\t'))
    --begin;
  size_t end = expansion_pos(clang_getRangeEnd(r)).offset;
  const size_t after = src.skip_space(end);
  if (after < src.text().size() && src.text()[after] == ';')
    end = after + 1;
  if (fn->code.empty())
    fn->code_loc = loc;
  else
    fn->code += "\n";
  fn->code += src.slice(begin, end);
  fn->code_has_execute = fn->code_has_execute || has_execute;
  for_each_worker_param_use(stmt, [&](const CodeUse &use) { fn->code_uses.push_back(use); });
  return true;
}

void Parser::parse_body(CXCursor body, Function *fn) {
  for (CXCursor stmt : children_of(body)) {
    const CXCursorKind kind = clang_getCursorKind(stmt);
    const Loc loc = loc_of(stmt);
    if (kind == CXCursor_NullStmt)
      continue;
    if (kind == CXCursor_IfStmt) {
      const std::vector<CXCursor> parts = children_of(stmt);
      CXCursor cond_call = parts.empty() ? clang_getNullCursor() : find_call(parts[0]);
      const std::string cond_name =
          clang_Cursor_isNull(cond_call) ? "" : to_string(clang_getCursorSpelling(cond_call));
      if (cond_name == "__ava_argument") {
        std::string macro;
        std::vector<std::string> args;
        if (!invocation_at(stmt, &macro, &args) || args.size() != 1) {
          diag_.error(loc, "ava_argument takes one argument name");
          continue;
        }
        auto it = std::find_if(fn->params.begin(), fn->params.end(),
                               [&](const Param &p) { return p.name == args[0]; });
        if (it == fn->params.end()) {
          diag_.error(loc, "'" + args[0] + "' is not an argument of " + fn->name);
          continue;
        }
        if (parts.size() > 1)
          parse_block(parts[1], &it->block, "ava_argument(" + args[0] + ")");
        continue;
      }
      if (cond_name == "__ava_return_value") {
        if (parts.size() > 1)
          parse_block(parts[1], &fn->ret_block, "ava_return_value");
        continue;
      }
      if (cond_name == "__ava_element" || cond_name == "__ava_field") {
        diag_.error(loc, cond_name.substr(2) + " must be inside ava_argument or ava_return_value");
        continue;
      }
      if (parts.size() == 2 && is_lone_async(parts[1])) {
        // `if (cond) { ava_async; }`: async only when cond holds.
        std::string cond;
        size_t end = 0;
        if (!src_of(stmt).parenthesized_after_word(offset_of(stmt), &cond, &end)) {
          diag_.error(loc, "cannot read the condition of this if");
          continue;
        }
        Stmt s;
        s.kind = Stmt::Kind::If;
        s.loc = loc;
        s.cond = cond;
        s.then_block = std::make_shared<Block>();
        parse_block(parts[1], s.then_block.get(), "if (" + cond + ")");
        fn->block.stmts.push_back(std::move(s));
        continue;
      }
    }
    CXCursor call = find_call(stmt);
    const std::string callee =
        clang_Cursor_isNull(call) ? "" : to_string(clang_getCursorSpelling(call));
    if (kind != CXCursor_IfStmt && kind != CXCursor_ReturnStmt && kind != CXCursor_DeclStmt &&
        callee.rfind("__ava_", 0) == 0 && callee != "__ava_execute") {
      Stmt s;
      s.kind = Stmt::Kind::Annotation;
      s.loc = loc;
      if (annotation_of(call, &s.ann))
        fn->block.stmts.push_back(std::move(s));
      continue;
    }
    add_code(stmt, fn);
  }
}

bool Parser::is_lone_async(CXCursor then) {
  std::vector<CXCursor> stmts;
  if (clang_getCursorKind(then) == CXCursor_CompoundStmt)
    stmts = children_of(then);
  else
    stmts.push_back(then);
  if (stmts.size() != 1 || clang_getCursorKind(stmts[0]) == CXCursor_IfStmt)
    return false;
  CXCursor call = find_call(stmts[0]);
  return !clang_Cursor_isNull(call) && to_string(clang_getCursorSpelling(call)) == "__ava_async";
}

void Parser::collect_api_functions(const std::vector<CXCursor> &top) {
  auto is_api_header = [&](const std::string &path) {
    if (std::find(api_headers_.begin(), api_headers_.end(), path) == api_headers_.end())
      return false;
    // The C library's own headers are not APIs to remote.
    const std::string dir = path.substr(0, path.rfind('/'));
    return !(dir == "/usr/include" || dir.find("-linux-gnu") != std::string::npos ||
             dir.find("/lib/clang/") != std::string::npos ||
             dir.find("/lib/gcc/") != std::string::npos);
  };
  std::set<std::string> seen;
  for (CXCursor c : top) {
    if (clang_getCursorKind(c) != CXCursor_FunctionDecl || in_spec_file(c))
      continue;
    const Pos p = expansion_pos(clang_getCursorLocation(c));
    if (!p.file || !is_api_header(to_string(clang_getFileName(p.file))))
      continue;
    if (clang_getCursorLinkage(c) != CXLinkage_External)
      continue;
    const std::string name = to_string(clang_getCursorSpelling(c));
    // Compiler builtins and ava's markers are no API; other __names are
    // (CUDA's __cudaRegisterFatBinary is called by nvcc's code).
    if (name.rfind("__builtin", 0) == 0 || name.rfind("__ava_", 0) == 0 ||
        !seen.insert(name).second)
      continue;
    spec_->api_functions.push_back(name);
    if (defined_.count(name))
      continue;
    spec_->functions.push_back(make_function(c, name, false));
  }
  for (Function &fn : spec_->functions) {
    if (fn.in_spec && !seen.count(fn.name))
      fn.internal = true;
  }
}

} // namespace

bool parse_spec(const ParseOptions &options, Diagnostics &diag, Spec *spec) {
  Parser parser(options, diag, spec);
  return parser.run();
}

} // namespace cava
