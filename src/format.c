/* format.c — text without malloc: a printf subset into a caller's buffer,
 * messages on stderr, and the fatal path every check of the allocator ends
 * in.
 *
 * Layer: os.  Never allocates (snprintf may), never takes a lock: one
 * write(2) from a stack buffer, so it is safe inside malloc, after a
 * corruption has been found and in a forked child.
 *
 * Conversions: %s %p %c %d %u %x, with the l, ll and z length modifiers
 * and a width (- for left-aligned).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "debug.h"
#include "os.h"

typedef struct outbuf_s {
  char *buf;
  size_t size;
  size_t len; /* may exceed size: the length the whole text needs */
} outbuf_t;

static void out_char(outbuf_t *o, char c) {
  if (o->len + 1 < o->size) o->buf[o->len] = c;
  o->len++;
}

static void out_str(outbuf_t *o, const char *s) {
  if (!s) s = "(null)";
  while (*s) out_char(o, *s++);
}

static void out_unsigned(outbuf_t *o, unsigned long long v, unsigned base) {
  char tmp[24];
  int n = 0;
  do {
    tmp[n++] = "0123456789abcdef"[v % base];
    v /= base;
  } while (v);
  while (n) out_char(o, tmp[--n]);
}

/* Append what one conversion produced (in tmp) padded to width. */
static void out_padded(outbuf_t *o, const char *s, size_t n, int width, bool left) {
  int pad = width > (int)n ? width - (int)n : 0;
  if (!left) while (pad-- > 0) out_char(o, ' ');
  for (size_t i = 0; i < n; i++) out_char(o, s[i]);
  if (left) while (pad-- > 0) out_char(o, ' ');
}

size_t os_vformat(char *buf, size_t size, const char *fmt, va_list ap) {
  outbuf_t o = {buf, size, 0};
  for (const char *f = fmt; *f; f++) {
    if (*f != '%') {
      out_char(&o, *f);
      continue;
    }
    f++;
    bool left = false;
    int width = 0, longs = 0;
    bool is_size = false;
    if (*f == '-') { left = true; f++; }
    while (*f >= '0' && *f <= '9') width = width * 10 + (*f++ - '0');
    while (*f == 'l') { longs++; f++; }
    if (*f == 'z') { is_size = true; f++; }
    /* Format the conversion into tmp, then pad it. */
    char tmp[32];
    outbuf_t t = {tmp, sizeof(tmp), 0};
    switch (*f) {
    case 's': {
      const char *s = va_arg(ap, const char *);
      if (!s) s = "(null)";
      out_padded(&o, s, strlen(s), width, left);
      continue;
    }
    case 'c': out_char(&t, (char)va_arg(ap, int)); break;
    case 'p':
      out_str(&t, "0x");
      out_unsigned(&t, (uintptr_t)va_arg(ap, void *), 16);
      break;
    case 'd': {
      long long v = longs ? (longs > 1 ? va_arg(ap, long long) : va_arg(ap, long))
                          : is_size ? (long long)va_arg(ap, ssize_t) : va_arg(ap, int);
      if (v < 0) { out_char(&t, '-'); out_unsigned(&t, 0ull - (unsigned long long)v, 10); }
      else out_unsigned(&t, (unsigned long long)v, 10);
      break;
    }
    case 'u':
    case 'x': {
      unsigned long long v =
          is_size ? va_arg(ap, size_t)
                  : longs ? (longs > 1 ? va_arg(ap, unsigned long long) : va_arg(ap, unsigned long))
                          : va_arg(ap, unsigned);
      out_unsigned(&t, v, *f == 'x' ? 16 : 10);
      break;
    }
    case '%': out_char(&t, '%'); break;
    default: out_char(&t, '%'); if (*f) out_char(&t, *f); else f--; break;
    }
    out_padded(&o, tmp, t.len < sizeof(tmp) ? t.len : sizeof(tmp) - 1, width, left);
  }
  if (size) buf[o.len < size ? o.len : size - 1] = 0;
  return o.len;
}

size_t os_format(char *buf, size_t size, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  size_t n = os_vformat(buf, size, fmt, ap);
  va_end(ap);
  return n;
}

void os_write_all(int fd, const char *s, size_t n) {
  while (n) {
    ssize_t w = write(fd, s, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    s += w;
    n -= (size_t)w;
  }
}

/* One line on stderr, one write(2) from the stack. */
static void os_vmessage(const char *fmt, va_list ap) {
  char buf[512];
  size_t n = os_vformat(buf, sizeof(buf), fmt, ap);
  if (n >= sizeof(buf)) n = sizeof(buf) - 1;
  os_write_all(2, buf, n);
}

void os_message(const char *fmt, ...) {
  int saved = errno;
  va_list ap;
  va_start(ap, fmt);
  os_vmessage(fmt, ap);
  va_end(ap);
  errno = saved;
}

void os_fatal(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  os_vmessage(fmt, ap);
  va_end(ap);
  abort();
}

void mm_assert_fail(const char *expr, const char *file, int line, const char *func) {
  os_fatal("mmalloc: internal error: assertion `%s' failed (%s:%d, %s)\n", expr, file, line, func);
}

void mm_check_fail(const char *what, const char *why) {
  os_fatal("mmalloc: internal error: %s: %s\n", what, why);
}
