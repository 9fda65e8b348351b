// mmalloc/pool.hpp — mmalloc's object pools and heaps for C++ (C++17).
//
//   mmalloc::pool<T>            a typed object pool: create(args...) constructs
//                               a T in the pool, destroy(p) destroys it and
//                               frees it; release() drops every object at once
//                               (their destructors do not run); the pool goes
//                               with its owner (mm_pool_destroy)
//   mmalloc::pool_allocator<T>  a stateless allocator whose single objects
//                               (the nodes of std::list, std::map, std::set,
//                               std::unordered_map) come from one pool per node
//                               type, made on first use and kept for the
//                               program's life; arrays (n > 1) from mm_malloc
//   mmalloc::heap_resource      a std::pmr::memory_resource over an mm_heap_t:
//                               std::pmr containers allocate in the heap, and
//                               the resource's destruction (or release()) frees
//                               everything in it at once
//
// Errors as the C API: no memory throws std::bad_alloc; a pointer that is not
// the pool's or the heap's aborts with one line naming the call.
#ifndef MMALLOC_POOL_HPP
#define MMALLOC_POOL_HPP

#include <cstddef>
#include <memory_resource>
#include <new>
#include <utility>

#include <mmalloc.h>

namespace mmalloc {

// ---- pool<T> ---------------------------------------------------------------

template <class T>
class pool {
  static_assert(alignof(T) <= 4096, "mmalloc::pool: alignment above 4096");

 public:
  explicit pool(const char *name = "pool", std::size_t reserve = 0) {
    mm_pool_options_t o{};
    o.object_size = sizeof(T);
    o.alignment = alignof(T);
    o.name = name;
    o.reserve = reserve;
    pool_ = mm_pool_create(&o);
    if (!pool_) throw std::bad_alloc();
  }
  ~pool() {
    if (pool_) mm_pool_destroy(pool_);
  }
  pool(const pool &) = delete;
  pool &operator=(const pool &) = delete;
  pool(pool &&other) noexcept : pool_(std::exchange(other.pool_, nullptr)) {}
  pool &operator=(pool &&other) noexcept {
    if (this != &other) {
      if (pool_) mm_pool_destroy(pool_);
      pool_ = std::exchange(other.pool_, nullptr);
    }
    return *this;
  }

  // A new T, constructed from args, in the pool (std::bad_alloc when there is
  // no memory; an exception from T's constructor frees the memory again).
  template <class... Args>
  T *create(Args &&...args) {
    void *p = mm_pool_alloc(pool_);
    if (!p) throw std::bad_alloc();
    try {
      return ::new (p) T(std::forward<Args>(args)...);
    } catch (...) {
      mm_pool_free(pool_, p);
      throw;
    }
  }
  // Destroy and free an object create() returned (nullptr: nothing).
  void destroy(T *p) {
    if (!p) return;
    p->~T();
    mm_pool_free(pool_, p);
  }
  // Every object dropped at once, without its destructor.
  void release() { mm_pool_release(pool_); }
  mm_pool_stats_t stats() const {
    mm_pool_stats_t s{};
    mm_pool_stats(pool_, &s);
    return s;
  }
  mm_pool_t *get() const { return pool_; }

 private:
  mm_pool_t *pool_;
};

// ---- pool_allocator<T> -------------------------------------------------------

// The program-wide pool for objects of Size bytes aligned to Align (one per
// node type a container uses), made on first use.
template <std::size_t Size, std::size_t Align>
mm_pool_t *shared_pool() {
  static mm_pool_t *const p = [] {
    mm_pool_options_t o{};
    o.object_size = Size;
    o.alignment = Align;
    o.name = "mmalloc::pool_allocator";
    mm_pool_t *made = mm_pool_create(&o);
    if (!made) throw std::bad_alloc();
    return made;
  }();
  return p;
}

template <class T>
class pool_allocator {
 public:
  using value_type = T;
  pool_allocator() noexcept = default;
  template <class U>
  pool_allocator(const pool_allocator<U> &) noexcept {}

  T *allocate(std::size_t n) {
    if (n == 1 && sizeof(T) <= 32768 && alignof(T) <= 4096) {
      void *p = mm_pool_alloc(shared_pool<sizeof(T), alignof(T)>());
      if (!p) throw std::bad_alloc();
      return static_cast<T *>(p);
    }
    if (n > static_cast<std::size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
    void *p = alignof(T) <= 16 ? mm_malloc(n * sizeof(T)) : mm_aligned_alloc(alignof(T), n * sizeof(T));
    if (!p) throw std::bad_alloc();
    return static_cast<T *>(p);
  }
  void deallocate(T *p, std::size_t n) noexcept {
    if (n == 1 && sizeof(T) <= 32768 && alignof(T) <= 4096)
      mm_pool_free(shared_pool<sizeof(T), alignof(T)>(), p);
    else
      mm_free(p);
  }
  template <class U>
  bool operator==(const pool_allocator<U> &) const noexcept { return true; }
  template <class U>
  bool operator!=(const pool_allocator<U> &) const noexcept { return false; }
};

// ---- heap_resource -----------------------------------------------------------

class heap_resource : public std::pmr::memory_resource {
 public:
  explicit heap_resource(const char *name = "heap_resource") {
    std::size_t i = 0;
    for (; name && name[i] && i + 1 < sizeof(name_); i++) name_[i] = name[i];
    name_[i] = 0;
    heap_ = mm_heap_new(name_);
    if (!heap_) throw std::bad_alloc();
  }
  ~heap_resource() override { mm_heap_destroy(heap_); }
  heap_resource(const heap_resource &) = delete;
  heap_resource &operator=(const heap_resource &) = delete;

  // Everything allocated from the resource freed at once (the containers
  // using it must be gone, or never touched again).
  void release() {
    mm_heap_destroy(heap_);
    heap_ = mm_heap_new(name_);
    if (!heap_) throw std::bad_alloc();
  }
  mm_heap_stats_t stats() const {
    mm_heap_stats_t s{};
    mm_heap_stats(heap_, &s);
    return s;
  }
  mm_heap_t *get() const { return heap_; }

 protected:
  void *do_allocate(std::size_t bytes, std::size_t align) override {
    void *p = align <= 16 ? mm_heap_malloc(heap_, bytes) : mm_heap_aligned(heap_, align, bytes);
    if (!p) throw std::bad_alloc();
    return p;
  }
  void do_deallocate(void *p, std::size_t, std::size_t) override { mm_heap_free(heap_, p); }
  bool do_is_equal(const std::pmr::memory_resource &other) const noexcept override {
    return this == &other;
  }

 private:
  char name_[32];
  mm_heap_t *heap_;
};

}  // namespace mmalloc

#endif  // MMALLOC_POOL_HPP
