/*
 * Kernel parameter layouts from PTX text, for entries that carry no cubin
 * for the target. Parses only the `.entry name ( .param ..., ... )`
 * signature: each parameter is `.param [.align N] .type [qualifiers] name[K]`.
 * Offsets follow the CUDA parameter buffer rule: each parameter at the
 * next multiple of its alignment (explicit .align, else its type size).
 * The scan stops at len or the first NUL, whichever comes first.
 */
#include <string.h>

#include "fatbin.h"

enum { PTX_MAX_ARRAY = 1u << 20 };

struct PtxCursor {
  const char *s;
  size_t len;
  size_t pos;
};

static int at_end(const struct PtxCursor *c) {
  return c->pos >= c->len || c->s[c->pos] == '\0';
}

static int is_space(char ch) {
  return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v';
}

static int is_ident(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
         ch == '_' || ch == '$' || ch == '.';
}

static int peek_is(const struct PtxCursor *c, const char *word) {
  size_t n = strlen(word);
  if (c->len - c->pos < n)
    return 0;
  return memcmp(c->s + c->pos, word, n) == 0;
}

/* Skips blanks and // or block comments. */
static void skip_space(struct PtxCursor *c) {
  while (!at_end(c)) {
    if (is_space(c->s[c->pos])) {
      c->pos++;
    } else if (peek_is(c, "//")) {
      while (!at_end(c) && c->s[c->pos] != '\n')
        c->pos++;
    } else if (peek_is(c, "/*")) {
      c->pos += 2;
      while (!at_end(c) && !peek_is(c, "*/"))
        c->pos++;
      if (!at_end(c))
        c->pos += 2;
    } else {
      return;
    }
  }
}

/* Next identifier-like token (directives keep their leading dot). */
static size_t read_token(struct PtxCursor *c, const char **tok) {
  *tok = c->s + c->pos;
  size_t start = c->pos;
  while (!at_end(c) && is_ident(c->s[c->pos]) && !(c->pos > start && c->s[c->pos] == '.')) {
    c->pos++;
  }
  return c->pos - start;
}

static int token_is(const char *tok, size_t n, const char *word) {
  return strlen(word) == n && memcmp(tok, word, n) == 0;
}

static int read_number(struct PtxCursor *c, uint32_t *value) {
  uint64_t v = 0;
  size_t start = c->pos;
  while (!at_end(c) && c->s[c->pos] >= '0' && c->s[c->pos] <= '9') {
    v = v * 10 + (uint64_t)(c->s[c->pos] - '0');
    if (v > PTX_MAX_ARRAY)
      return AVA_FATBIN_E_CORRUPT;
    c->pos++;
  }
  if (c->pos == start)
    return AVA_FATBIN_E_CORRUPT;
  *value = (uint32_t)v;
  return AVA_FATBIN_OK;
}

/* Size in bytes of a PTX fundamental type such as .u32 or .b8; 0 if not a type. */
static uint32_t type_size(const char *tok, size_t n) {
  static const struct {
    const char *name;
    uint32_t size;
  } types[] = {
      {".u8", 1},  {".s8", 1},  {".b8", 1},    {".u16", 2},    {".s16", 2},
      {".b16", 2}, {".f16", 2}, {".bf16", 2},  {".u32", 4},    {".s32", 4},
      {".b32", 4}, {".f32", 4}, {".f16x2", 4}, {".bf16x2", 4}, {".u64", 8},
      {".s64", 8}, {".b64", 8}, {".f64", 8},   {".b128", 16},
  };
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
    if (token_is(tok, n, types[i].name))
      return types[i].size;
  }
  return 0;
}

/* One `.param ...` declaration; the cursor is just after `.param`. */
static int parse_param(struct PtxCursor *c, uint32_t *size, uint32_t *align) {
  uint32_t elem = 0;
  uint32_t explicit_align = 0;
  uint32_t count = 1;
  for (;;) {
    skip_space(c);
    if (at_end(c))
      return AVA_FATBIN_E_TRUNCATED;
    char ch = c->s[c->pos];
    if (ch == ',' || ch == ')')
      break;
    if (ch == '[') {
      c->pos++;
      skip_space(c);
      int rc = read_number(c, &count);
      if (rc != AVA_FATBIN_OK)
        return rc;
      skip_space(c);
      if (at_end(c) || c->s[c->pos] != ']')
        return AVA_FATBIN_E_CORRUPT;
      c->pos++;
      continue;
    }
    const char *tok;
    size_t n = read_token(c, &tok);
    if (n == 0)
      return AVA_FATBIN_E_CORRUPT;
    if (token_is(tok, n, ".align")) {
      skip_space(c);
      int rc = read_number(c, &explicit_align);
      if (rc != AVA_FATBIN_OK)
        return rc;
      if (explicit_align == 0 || (explicit_align & (explicit_align - 1)) != 0)
        return AVA_FATBIN_E_CORRUPT;
    } else if (tok[0] == '.') {
      uint32_t s = type_size(tok, n);
      if (s != 0)
        elem = s; /* other directives: .ptr, state spaces */
    }
  }
  if (elem == 0)
    return AVA_FATBIN_E_CORRUPT;
  *size = elem * count;
  *align = explicit_align != 0 ? explicit_align : elem;
  return AVA_FATBIN_OK;
}

static int parse_signature(struct PtxCursor *c, struct ava_kernel_params *out) {
  skip_space(c);
  if (at_end(c))
    return AVA_FATBIN_E_TRUNCATED;
  if (c->s[c->pos] != '(')
    return AVA_FATBIN_OK; /* no parameter list */
  c->pos++;
  uint64_t cur = 0;
  for (;;) {
    skip_space(c);
    if (at_end(c))
      return AVA_FATBIN_E_TRUNCATED;
    if (c->s[c->pos] == ')')
      break;
    const char *tok;
    size_t n = read_token(c, &tok);
    if (!token_is(tok, n, ".param"))
      return AVA_FATBIN_E_CORRUPT;
    uint32_t size = 0;
    uint32_t align = 1;
    int rc = parse_param(c, &size, &align);
    if (rc != AVA_FATBIN_OK)
      return rc;
    if (out->count == AVA_KERNEL_MAX_PARAMS)
      return AVA_FATBIN_E_TOO_MANY;
    cur = (cur + align - 1) / align * align;
    if (cur + size > UINT32_MAX)
      return AVA_FATBIN_E_CORRUPT;
    out->offsets[out->count] = (uint32_t)cur;
    out->sizes[out->count] = size;
    out->count++;
    cur += size;
    if (c->s[c->pos] == ',')
      c->pos++;
  }
  out->total = (uint32_t)cur;
  return AVA_FATBIN_OK;
}

int ava_ptx_kernel_params(const char *ptx, size_t len, const char *kernel_name,
                          struct ava_kernel_params *out) {
  if (ptx == NULL || kernel_name == NULL || out == NULL)
    return AVA_FATBIN_E_INVALID;
  size_t name_len = strlen(kernel_name);
  struct PtxCursor c = {ptx, len, 0};
  while (!at_end(&c)) {
    if (peek_is(&c, "//") || peek_is(&c, "/*")) {
      skip_space(&c);
      continue;
    }
    int boundary = c.pos == 0 || is_space(ptx[c.pos - 1]);
    if (!boundary || !peek_is(&c, ".entry") || c.len - c.pos < 7 || !is_space(ptx[c.pos + 6])) {
      c.pos++;
      continue;
    }
    c.pos += 6;
    skip_space(&c);
    const char *tok;
    size_t n = read_token(&c, &tok);
    if (n != name_len || memcmp(tok, kernel_name, n) != 0)
      continue;
    memset(out, 0, sizeof *out);
    return parse_signature(&c, out);
  }
  return AVA_FATBIN_E_NOT_FOUND;
}
