/* json.h — a tiny strict JSON reader for the statistics tests.
 *
 *   json_valid(text)                  the whole text is one JSON value (RFC 8259)
 *   json_number(text, path, &out)     the number at a dotted path ("options.heaps",
 *                                     "total.large_allocs", "heaps.0.slots")
 *   json_array_length(text, path)     elements of the array at path, or -1
 *   json_string(text, path, buf, n)   the string at path (no escapes decoded)
 *   json_bool(text, path, &out)       the true or false at path
 *
 * No allocation; recursion depth bounded by the input's nesting.
 */
#ifndef MM_TEST_JSON_H
#define MM_TEST_JSON_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct json_find_s {
  const char *path;  /* what remains of the path to find, NULL: not looking */
  const char *found; /* start of the value found */
  const char *end;   /* just past it */
  long elements;     /* for an array found: its length */
} json_find_t;

static const char *json_value(const char *s, json_find_t *f, const char *here, int depth);

static const char *json_ws(const char *s) {
  while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r') s++;
  return s;
}

static const char *json_str(const char *s) {
  if (*s != '"') return NULL;
  for (s++; *s != '"'; s++) {
    if ((unsigned char)*s < 0x20) return NULL;
    if (*s == '\\') {
      s++;
      if (*s == 'u') {
        for (int i = 1; i <= 4; i++)
          if (!strchr("0123456789abcdefABCDEF", s[i]) || !s[i]) return NULL;
        s += 4;
      } else if (!*s || !strchr("\"\\/bfnrt", *s)) {
        return NULL;
      }
    }
  }
  return s + 1;
}

static const char *json_num(const char *s) {
  if (*s == '-') s++;
  if (*s == '0') s++;
  else if (*s >= '1' && *s <= '9') while (*s >= '0' && *s <= '9') s++;
  else return NULL;
  if (*s == '.') {
    s++;
    if (!(*s >= '0' && *s <= '9')) return NULL;
    while (*s >= '0' && *s <= '9') s++;
  }
  if (*s == 'e' || *s == 'E') {
    s++;
    if (*s == '+' || *s == '-') s++;
    if (!(*s >= '0' && *s <= '9')) return NULL;
    while (*s >= '0' && *s <= '9') s++;
  }
  return s;
}

/* Does the path's next component equal key [k, k+n)?  Then return the rest. */
static const char *json_path_step(const char *path, const char *k, size_t n) {
  if (!path) return NULL;
  size_t len = strcspn(path, ".");
  if (len != n || strncmp(path, k, n) != 0) return NULL;
  return path[len] == '.' ? path + len + 1 : "";
}

static const char *json_value(const char *s, json_find_t *f, const char *path, int depth) {
  if (depth > 64) return NULL;
  s = json_ws(s);
  const char *start = s;
  long count = 0;
  if (*s == '{') {
    s = json_ws(s + 1);
    if (*s != '}') {
      for (;;) {
        const char *key = s;
        s = json_str(s);
        if (!s) return NULL;
        const char *sub = path && *path ? json_path_step(path, key + 1, (size_t)(s - key - 2)) : NULL;
        s = json_ws(s);
        if (*s++ != ':') return NULL;
        s = json_value(s, f, sub, depth + 1);
        if (!s) return NULL;
        s = json_ws(s);
        if (*s == ',') {
          s = json_ws(s + 1);
          continue;
        }
        if (*s != '}') return NULL;
        break;
      }
    }
    s++;
  } else if (*s == '[') {
    s = json_ws(s + 1);
    if (*s != ']') {
      for (;;) {
        char idx[24];
        int n = snprintf(idx, sizeof(idx), "%ld", count);
        const char *sub = path && *path ? json_path_step(path, idx, (size_t)n) : NULL;
        s = json_value(s, f, sub, depth + 1);
        if (!s) return NULL;
        count++;
        s = json_ws(s);
        if (*s == ',') {
          s = json_ws(s + 1);
          continue;
        }
        if (*s != ']') return NULL;
        break;
      }
    }
    s++;
  } else if (*s == '"') {
    s = json_str(s);
  } else if (!strncmp(s, "true", 4)) {
    s += 4;
  } else if (!strncmp(s, "false", 5)) {
    s += 5;
  } else if (!strncmp(s, "null", 4)) {
    s += 4;
  } else {
    s = json_num(s);
  }
  if (s && path && !*path && f) {
    f->found = start;
    f->end = s;
    f->elements = *start == '[' ? count : -1;
  }
  return s;
}

__attribute__((unused)) static bool json_valid(const char *text) {
  const char *s = json_value(text, NULL, NULL, 0);
  return s && *json_ws(s) == 0;
}

__attribute__((unused)) static bool json_number(const char *text, const char *path, double *out) {
  json_find_t f = {path, NULL, NULL, -1};
  const char *s = json_value(text, &f, path, 0);
  if (!s || !f.found || !json_num(f.found) || json_num(f.found) != f.end) return false;
  *out = strtod(f.found, NULL);
  return true;
}

__attribute__((unused)) static long json_array_length(const char *text, const char *path) {
  json_find_t f = {path, NULL, NULL, -1};
  const char *s = json_value(text, &f, path, 0);
  return s && f.found ? f.elements : -1;
}

__attribute__((unused)) static bool json_string(const char *text, const char *path, char *buf,
                                                size_t n) {
  json_find_t f = {path, NULL, NULL, -1};
  const char *s = json_value(text, &f, path, 0);
  if (!s || !f.found || *f.found != '"' || n == 0) return false;
  size_t len = (size_t)(f.end - f.found - 2);
  if (len >= n) len = n - 1;
  memcpy(buf, f.found + 1, len);
  buf[len] = 0;
  return true;
}

__attribute__((unused)) static bool json_bool(const char *text, const char *path, bool *out) {
  json_find_t f = {path, NULL, NULL, -1};
  const char *s = json_value(text, &f, path, 0);
  if (!s || !f.found || (*f.found != 't' && *f.found != 'f')) return false;
  *out = *f.found == 't';
  return true;
}

#endif
