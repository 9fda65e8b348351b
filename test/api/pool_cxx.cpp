// pool_cxx.cpp — include/mmalloc/pool.hpp: mmalloc::pool<T>,
// mmalloc::pool_allocator<T> with the node containers, and
// mmalloc::heap_resource with std::pmr containers.
//
//   - pool<T>: create() constructs (arguments forwarded), destroy() runs
//     the destructor and frees, a throwing constructor leaves nothing live,
//     release() drops every object, the statistics follow;
//   - pool_allocator: std::list, std::map, std::set and std::unordered_map
//     hold their elements (checked against the same operations on standard
//     containers), their nodes come from pools (live objects in
//     mm_stats_json's pools while they exist, none after), vectors (n > 1)
//     from mm_malloc;
//   - heap_resource: std::pmr::vector, map, string and list allocate in the
//     heap (its live objects grow), hold their values, and release() or the
//     resource's end frees every page block (lent_bytes back).
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <list>
#include <map>
#include <memory_resource>
#include <set>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include <mmalloc/pool.hpp>

#include "api/lent.h"
#include "check.h"

// page blocks lent out, less what secure mode's release quarantine holds
static long lent_bytes() { return total_lent_bytes(); }

// live objects of every pool_allocator pool, from mm_stats_json
static long allocator_pool_live() {
  static char buf[1 << 16];
  mm_stats_json(buf, sizeof(buf));
  long live = 0;
  for (const char *p = buf; (p = std::strstr(p, "\"name\":\"mmalloc::pool_allocator\"")); p++) {
    const char *l = std::strstr(p, "\"live_objects\":");
    if (l) live += std::atol(l + std::strlen("\"live_objects\":"));
  }
  return live;
}

struct widget {
  static int alive;
  long a, b;
  std::string s;
  widget(long x, const char *t) : a(x), b(-x), s(t) {
    if (x < 0) throw std::runtime_error("negative");
    alive++;
  }
  ~widget() { alive--; }
};
int widget::alive = 0;

static void test_pool() {
  mmalloc::pool<widget> pool("widgets", 100);
  mm_pool_stats_t s = pool.stats();
  CHECK("reserve carved", s.objects >= 100 && s.free_objects == s.objects);
  CHECK("object size at least sizeof(T)", s.object_size >= sizeof(widget));
  std::vector<widget *> v;
  for (long i = 0; i < 10000; i++) v.push_back(pool.create(i, "a string long enough to allocate"));
  CHECK("constructors ran", widget::alive == 10000);
  bool ok = true;
  for (long i = 0; i < 10000; i++) ok &= v[i]->a == i && v[i]->b == -i && v[i]->s.size() == 32;
  CHECK("arguments forwarded, objects intact", ok);
  CHECK("aligned", reinterpret_cast<uintptr_t>(v[0]) % alignof(widget) == 0);
  s = pool.stats();
  CHECK("10000 live", s.objects - s.free_objects == 10000);
  bool threw = false;
  try {
    pool.create(-1L, "x");
  } catch (const std::runtime_error &) {
    threw = true;
  }
  CHECK("a throwing constructor propagates", threw);
  s = pool.stats();
  CHECK("... and leaves its memory free", s.objects - s.free_objects == 10000);
  for (widget *w : v) pool.destroy(w);
  pool.destroy(nullptr);
  CHECK("destructors ran", widget::alive == 0);
  s = pool.stats();
  CHECK("nothing live", s.objects == s.free_objects);
  for (long i = 0; i < 1000; i++) pool.create(i, "x");
  widget::alive = 0;  // release() runs no destructor: forget them
  pool.release();
  s = pool.stats();
  CHECK("release: no block, no object", s.blocks == 0 && s.objects == 0);
  mmalloc::pool<widget> moved = std::move(pool);
  widget *w = moved.create(5L, "moved");
  CHECK("a moved pool works", w->a == 5);
  moved.destroy(w);
}

static void test_allocator() {
  long live0 = allocator_pool_live();
  {
    std::list<int, mmalloc::pool_allocator<int>> l;
    std::list<int> lref;
    std::map<int, std::string, std::less<int>,
             mmalloc::pool_allocator<std::pair<const int, std::string>>> m;
    std::map<int, std::string> mref;
    std::set<long, std::less<long>, mmalloc::pool_allocator<long>> st;
    std::set<long> stref;
    std::unordered_map<int, int, std::hash<int>, std::equal_to<int>,
                       mmalloc::pool_allocator<std::pair<const int, int>>> um;
    std::unordered_map<int, int> umref;
    unsigned x = 12345;
    for (int i = 0; i < 20000; i++) {
      x = x * 1103515245u + 12345u;
      int k = static_cast<int>(x >> 16) % 5000;
      switch (x % 4) {
      case 0: l.push_back(k), lref.push_back(k); break;
      case 1: m[k] = std::to_string(i), mref[k] = std::to_string(i); break;
      case 2: st.insert(k), stref.insert(k); break;
      default: um[k] += i, umref[k] += i; break;
      }
      if (x % 7 == 0) {
        if (!l.empty()) l.pop_front(), lref.pop_front();
        m.erase(k), mref.erase(k);
        st.erase(k), stref.erase(k);
        um.erase(k), umref.erase(k);
      }
    }
    CHECK("list holds what std::list holds", std::equal(l.begin(), l.end(), lref.begin(), lref.end()));
    CHECK("map holds what std::map holds", m.size() == mref.size() &&
                                               std::equal(m.begin(), m.end(), mref.begin()));
    CHECK("set holds what std::set holds", std::equal(st.begin(), st.end(), stref.begin(), stref.end()));
    bool same = um.size() == umref.size();
    for (auto &kv : umref) same &= um.count(kv.first) && um.at(kv.first) == kv.second;
    CHECK("unordered_map holds what std::unordered_map holds", same);
    long nodes = static_cast<long>(l.size() + m.size() + st.size() + um.size());
    CHECK("the nodes live in the allocator's pools", allocator_pool_live() - live0 == nodes);
    std::vector<double, mmalloc::pool_allocator<double>> v(1000, 1.5);
    double sum = 0;
    for (double d : v) sum += d;
    CHECK("a vector (n > 1) through mm_malloc", sum == 1500.0 && mm_malloc_usable_size(v.data()) >= 8000);
  }
  CHECK("every node freed back to the pools", allocator_pool_live() == live0);
}

static void test_heap_resource() {
  long lent0 = lent_bytes();
  {
    mmalloc::heap_resource heap("pmr");
    {
      std::pmr::vector<std::pmr::string> v(&heap);
      std::pmr::map<int, std::pmr::string> m(&heap);
      std::pmr::list<long> l(&heap);
      for (int i = 0; i < 5000; i++) {
        v.emplace_back(std::string(50 + i % 100, static_cast<char>('a' + i % 26)));
        m.emplace(i, std::to_string(i * 3));
        l.push_back(i);
      }
      mm_heap_stats_t s = heap.stats();
      CHECK("the containers live in the heap", s.live_objects >= 10000 && s.blocks > 0);
      CHECK("its page blocks are lent", lent_bytes() - lent0 == static_cast<long>(s.bytes));
      bool ok = true;
      for (int i = 0; i < 5000; i++)
        ok &= v[i].size() == static_cast<size_t>(50 + i % 100) && v[i][0] == 'a' + i % 26 &&
              std::string(m[i]) == std::to_string(i * 3);
      CHECK("pmr containers keep their values", ok && l.size() == 5000 && l.back() == 4999);
      CHECK("v's strings use the resource too", v[0].get_allocator().resource() == &heap);
    }
    mm_heap_stats_t s = heap.stats();
    CHECK("the containers' end freed their objects", s.live_objects == 0);
    auto *leak = static_cast<char *>(heap.allocate(100000, 64));
    CHECK("allocate(100000, 64) aligned", reinterpret_cast<uintptr_t>(leak) % 64 == 0);
    std::memset(leak, 1, 100000);
    heap.release();
    CHECK("release frees what was never deallocated", heap.stats().live_objects == 0);
    CHECK("resources compare by identity", heap.is_equal(heap) && !heap.is_equal(*std::pmr::new_delete_resource()));
    bool threw = false;
    try {
      (void)heap.allocate(static_cast<size_t>(1) << 40, 8);
    } catch (const std::bad_alloc &) {
      threw = true;
    }
    CHECK("no memory: std::bad_alloc", threw);
  }
  CHECK("the resource's end gives every block back", lent_bytes() == lent0);
}

int main() {
  test_pool();
  test_allocator();
  test_heap_resource();
  return check_summary("api_pool_cxx");
}
