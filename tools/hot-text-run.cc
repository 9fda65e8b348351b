// hot-text-run.cc — the C++ operators and containers a common program uses,
// for tools/hot-text.sh: new and delete, their array and sized forms,
// strings and vectors that grow, a map of many small nodes.
#include <map>
#include <memory>
#include <string>
#include <vector>

int main() {
  std::map<int, std::string> m;
  std::vector<std::unique_ptr<int[]>> arrays;
  for (int i = 0; i < 20000; i++) {
    m[i] = std::string(static_cast<size_t>(i % 64), 'x');
    if (i % 100 == 0) arrays.emplace_back(new int[static_cast<size_t>(i + 1)]);
  }
  std::vector<int> v;
  for (int i = 0; i < 1000000; i++) v.push_back(i);
  auto *p = new std::string("a string too long for the small-string buffer");
  delete p;
  return static_cast<int>(m.size() + arrays.size() + v.size()) == 0;
}
