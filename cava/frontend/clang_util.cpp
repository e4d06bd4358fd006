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
