// SPDX-License-Identifier: MIT
#include "cava/frontend/clang_util.hpp"

namespace cava {

std::string to_string(CXString s) {
  const char *p = clang_getCString(s);
  std::string out = p ? p : "";
  clang_disposeString(s);
  return out;
}

Pos expansion_pos(CXSourceLocation loc) {
  Pos p;
  clang_getExpansionLocation(loc, &p.file, &p.line, &p.col, &p.offset);
  return p;
}

std::vector<CXCursor> children_of(CXCursor c) {
  std::vector<CXCursor> out;
  clang_visitChildren(
      c,
      [](CXCursor child, CXCursor, CXClientData data) {
        static_cast<std::vector<CXCursor> *>(data)->push_back(child);
        return CXChildVisit_Continue;
      },
      &out);
  return out;
}

CXCursor find_call(CXCursor c) {
  for (int depth = 0; depth < 16; ++depth) {
    const CXCursorKind k = clang_getCursorKind(c);
    if (k == CXCursor_CallExpr)
      return c;
    if (k != CXCursor_UnexposedExpr && k != CXCursor_ParenExpr && k != CXCursor_CStyleCastExpr)
      break;
    const std::vector<CXCursor> ch = children_of(c);
    if (ch.empty())
      break;
    c = ch.back();
  }
  return clang_getNullCursor();
}

void for_each_call(CXCursor c, const std::function<void(const std::string &)> &f) {
  struct Ctx {
    const std::function<void(const std::string &)> *f;
  } ctx{&f};
  clang_visitChildren(
      c,
      [](CXCursor child, CXCursor, CXClientData data) {
        if (clang_getCursorKind(child) == CXCursor_CallExpr)
          (*static_cast<Ctx *>(data)->f)(to_string(clang_getCursorSpelling(child)));
        return CXChildVisit_Recurse;
      },
      &ctx);
  if (clang_getCursorKind(c) == CXCursor_CallExpr)
    f(to_string(clang_getCursorSpelling(c)));
}

namespace {

using UseFn = std::function<void(const CodeUse &)>;

std::vector<std::string> tokens_of(CXCursor c) {
  CXTranslationUnit tu = clang_Cursor_getTranslationUnit(c);
  CXToken *tokens = nullptr;
  unsigned n = 0;
  clang_tokenize(tu, clang_getCursorExtent(c), &tokens, &n);
  std::vector<std::string> out;
  for (unsigned i = 0; i < n; ++i)
    out.push_back(to_string(clang_getTokenSpelling(tu, tokens[i])));
  clang_disposeTokens(tu, tokens, n);
  return out;
}

// An if condition that is ava_is_guest or a chain of && with ava_is_guest as
// one operand, as written: the worker never runs what it guards. Anything
// else (||, ?:, a macro hiding the test) is taken as possibly true there.
bool guest_only_condition(CXCursor cond) {
  const std::vector<std::string> t = tokens_of(cond);
  bool guest = false;
  int depth = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == "(" || t[i] == "[")
      ++depth;
    else if (t[i] == ")" || t[i] == "]")
      --depth;
    else if (depth == 0 && (t[i] == "||" || t[i] == "?" || t[i] == ","))
      return false;
    else if (depth == 0 && t[i] == "ava_is_guest")
      guest = guest || ((i == 0 || t[i - 1] == "&&") && (i + 1 == t.size() || t[i + 1] == "&&"));
  }
  return guest;
}

// c without the parentheses and casts (implicit ones included) around it.
CXCursor strip(CXCursor c) {
  for (;;) {
    const CXCursorKind k = clang_getCursorKind(c);
    if (k != CXCursor_UnexposedExpr && k != CXCursor_ParenExpr && k != CXCursor_CStyleCastExpr)
      return c;
    const std::vector<CXCursor> ch = children_of(c);
    if (ch.empty() || (k != CXCursor_CStyleCastExpr && ch.size() != 1))
      return c;
    c = ch.back();
  }
}

// The parameter c names, or "".
std::string param_of(CXCursor c) {
  c = strip(c);
  if (clang_getCursorKind(c) != CXCursor_DeclRefExpr)
    return "";
  const CXCursor target = clang_getCursorReferenced(c);
  if (clang_getCursorKind(target) != CXCursor_ParmDecl)
    return "";
  return to_string(clang_getCursorSpelling(target));
}

bool is_zero(CXCursor c) {
  c = strip(c);
  if (clang_getCursorKind(c) != CXCursor_IntegerLiteral)
    return false;
  CXEvalResult r = clang_Cursor_Evaluate(c);
  if (r == nullptr)
    return false;
  const bool zero =
      clang_EvalResult_getKind(r) == CXEval_Int && clang_EvalResult_getAsLongLong(r) == 0;
  clang_EvalResult_dispose(r);
  return zero;
}

void visit_uses(CXCursor c, const UseFn &f);

void visit_children(CXCursor c, const UseFn &f) {
  for (CXCursor child : children_of(c))
    visit_uses(child, f);
}

void visit_uses(CXCursor c, const UseFn &f) {
  const CXCursorKind kind = clang_getCursorKind(c);
  std::vector<CXCursor> parts;
  switch (kind) {
  case CXCursor_DeclRefExpr:
    if (const std::string p = param_of(c); !p.empty())
      f({p, CodeUse::Kind::Other, "", -1});
    return;
  case CXCursor_IfStmt:
  case CXCursor_WhileStmt:
  case CXCursor_ConditionalOperator:
    parts = children_of(c);
    if (kind == CXCursor_IfStmt && parts.size() >= 2 && guest_only_condition(parts[0])) {
      if (parts.size() > 2)
        visit_uses(parts[2], f);
      return;
    }
    if (!parts.empty() && !param_of(parts[0]).empty()) {
      f({param_of(parts[0]), CodeUse::Kind::NullTest, "", -1});
      for (size_t i = 1; i < parts.size(); ++i)
        visit_uses(parts[i], f);
      return;
    }
    break;
  case CXCursor_BinaryOperator:
    // p == NULL, p != 0: whatever the operator, one with a literal 0 never
    // looks at the memory p points to.
    parts = children_of(c);
    if (parts.size() == 2) {
      for (int side = 0; side < 2; ++side) {
        const std::string p = param_of(parts[side]);
        if (!p.empty() && is_zero(parts[1 - side])) {
          f({p, CodeUse::Kind::NullTest, "", -1});
          return;
        }
      }
    }
    break;
  case CXCursor_UnaryOperator:
    parts = children_of(c);
    if (parts.size() == 1 && !param_of(parts[0]).empty()) {
      const std::vector<std::string> t = tokens_of(c);
      if (!t.empty() && t[0] == "!") {
        f({param_of(parts[0]), CodeUse::Kind::NullTest, "", -1});
        return;
      }
    }
    break;
  case CXCursor_CallExpr: {
    // The children are the callee, then the arguments.
    const std::string callee = to_string(clang_getCursorSpelling(c));
    const int n = clang_Cursor_getNumArguments(c);
    parts = children_of(c);
    const int first = static_cast<int>(parts.size()) - (n > 0 ? n : 0);
    for (int i = 0; i < static_cast<int>(parts.size()); ++i) {
      const std::string p = n >= 0 && i >= first ? param_of(parts[i]) : "";
      if (!p.empty())
        f({p, CodeUse::Kind::Argument, callee, i - first});
      else
        visit_uses(parts[i], f);
    }
    return;
  }
  default:
    break;
  }
  visit_children(c, f);
}

} // namespace

void for_each_worker_param_use(CXCursor c, const UseFn &f) {
  visit_uses(c, f);
}

std::string unqualified(std::string s) {
  for (const char *q : {"const ", "volatile "}) {
    while (s.rfind(q, 0) == 0)
      s = s.substr(std::char_traits<char>::length(q));
  }
  for (const char *q : {" const", " volatile"}) {
    const std::string qs = q;
    while (s.size() > qs.size() && s.compare(s.size() - qs.size(), qs.size(), qs) == 0)
      s.resize(s.size() - qs.size());
  }
  return s;
}

TypeInfo type_info(CXType t) {
  TypeInfo info;
  info.spelling = to_string(clang_getTypeSpelling(t));
  const CXType canon = clang_getCanonicalType(t);
  info.canonical = to_string(clang_getTypeSpelling(canon));
  const long long size = clang_Type_getSizeOf(t);
  info.size = size > 0 ? static_cast<uint64_t>(size) : 0;
  switch (canon.kind) {
  case CXType_Void:
    info.kind = TypeInfo::Kind::Void;
    break;
  case CXType_Bool:
    info.kind = TypeInfo::Kind::Int;
    info.is_bool = true;
    break;
  case CXType_Char_U:
  case CXType_UChar:
  case CXType_UShort:
  case CXType_UInt:
  case CXType_ULong:
  case CXType_ULongLong:
  case CXType_Char16:
  case CXType_Char32:
    info.kind = TypeInfo::Kind::Int;
    break;
  case CXType_Char_S:
  case CXType_SChar:
  case CXType_Short:
  case CXType_Int:
  case CXType_Long:
  case CXType_LongLong:
  case CXType_WChar:
    info.kind = TypeInfo::Kind::Int;
    info.is_signed = true;
    break;
  case CXType_Enum: {
    info.kind = TypeInfo::Kind::Int;
    const CXType it =
        clang_getCanonicalType(clang_getEnumDeclIntegerType(clang_getTypeDeclaration(canon)));
    info.is_signed = it.kind == CXType_Int || it.kind == CXType_Long ||
                     it.kind == CXType_LongLong || it.kind == CXType_Short ||
                     it.kind == CXType_SChar || it.kind == CXType_Char_S;
    break;
  }
  case CXType_Float:
  case CXType_Double:
    info.kind = TypeInfo::Kind::Float;
    break;
  case CXType_Pointer: {
    // Look through typedefs only as far as needed, so the pointee keeps its
    // own typedef name ("demo_obj" in "demo_obj *").
    CXType pt = t;
    for (int i = 0; i < 32 && pt.kind != CXType_Pointer; ++i) {
      if (pt.kind == CXType_Typedef)
        pt = clang_getTypedefDeclUnderlyingType(clang_getTypeDeclaration(pt));
      else if (pt.kind == CXType_Elaborated)
        pt = clang_Type_getNamedType(pt);
      else
        pt = canon;
    }
    const CXType pointee = clang_getPointeeType(pt);
    const CXType pcanon = clang_getCanonicalType(pointee);
    info.pointee = std::make_shared<TypeInfo>(type_info(pointee));
    info.pointee_const = clang_isConstQualifiedType(pointee) != 0;
    if (pcanon.kind == CXType_FunctionProto || pcanon.kind == CXType_FunctionNoProto) {
      info.kind = TypeInfo::Kind::FunctionPointer;
      info.fn_result = std::make_shared<TypeInfo>(type_info(clang_getResultType(pcanon)));
      const int n = clang_getNumArgTypes(pcanon);
      for (int i = 0; i < n; ++i)
        info.fn_params.push_back(type_info(clang_getArgType(pcanon, static_cast<unsigned>(i))));
    } else {
      info.kind = TypeInfo::Kind::Pointer;
    }
    break;
  }
  case CXType_Record:
    info.kind = TypeInfo::Kind::Record;
    break;
  default:
    info.kind = TypeInfo::Kind::Other;
    break;
  }
  return info;
}

} // namespace cava
