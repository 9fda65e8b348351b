/* debug.h — assertions, at the three debug levels.
 *
 * Layer: os.
 *
 *   mm_assert(e)            MM_DEBUG >= 1: a precondition the caller must
 *                           meet ("caller checked", "never NULL here")
 *   mm_assert_internal(e)   MM_DEBUG >= 2: the allocator's own logic
 *                           ("owner only", "on no list", counts agree)
 *   mm_assert_expensive(e)  MM_DEBUG >= 3: whole-structure walks, usually a
 *                           checker (..._is_valid) through MM_CHECK
 *
 * Each is `if (level && !(e)) fail`, not an #if: the expression is compiled
 * and type-checked in every build, so an assertion cannot rot while the
 * release build ignores it, and the optimiser removes it (and any call in
 * it) when the level is off.  Lock ownership is asserted with the lock
 * module's lock_assert_held (lock.h), which the witness backs.
 *
 * Corruption found in user input (bad pointer, double free, write after
 * free) is not an assertion: it is always checked and reported with the
 * call and the pointer (free.c, page.c).
 */
#ifndef MM_DEBUG_H
#define MM_DEBUG_H

#include "base.h"

MM_HIDDEN_BEGIN

MM_NORETURN MM_COLD void mm_assert_fail(const char *expr, const char *file, int line,
                                        const char *func);
MM_NORETURN MM_COLD void mm_check_fail(const char *what, const char *why);

#define mm_assert_level(level, e)                                     \
  do {                                                                \
    if (MM_DEBUG >= (level) && unlikely(!(e)))                        \
      mm_assert_fail(#e, __FILE__, __LINE__, __func__);               \
  } while (0)

#define mm_assert(e) mm_assert_level(1, e)
#define mm_assert_internal(e) mm_assert_level(2, e)
#define mm_assert_expensive(e) mm_assert_level(3, e)

/* MM_CHECK(level, what, checker(args..., MM_WHY)): run a structure
 * checker `bool checker(args..., char *why, size_t why_size)` at this
 * debug level and abort with its one-line reason when it fails; MM_WHY
 * stands for the reason's buffer and size. */
#define MM_WHY mm_why_, sizeof(mm_why_)
#define MM_CHECK(level, what, call)                                   \
  do {                                                                \
    if (MM_DEBUG >= (level)) {                                        \
      char mm_why_[240] = "";                                         \
      if (!(call)) mm_check_fail(what, mm_why_);                      \
    }                                                                 \
  } while (0)

MM_HIDDEN_END

#endif
