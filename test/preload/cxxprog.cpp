// cxxprog.cpp — a C++ program for the preload suite: std::map, std::string,
// std::vector and std::unordered_map work with a fixed seed, printing
// checksums only.  Built plain (not linked to mmalloc); run.sh runs it with
// and without LD_PRELOAD and compares the output.
//   usage: preload_cxxprog N
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

static std::uint64_t fnv(const std::string &s, std::uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

int main(int argc, char **argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 100000;
  std::uint64_t state = 88172645463325252ull;
  auto next = [&state] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  std::map<std::string, std::vector<int>> m;
  std::unordered_map<std::uint64_t, std::string> u;
  std::vector<std::unique_ptr<std::string>> owned;
  for (int i = 0; i < n; i++) {
    std::uint64_t r = next();
    std::string key = "k" + std::to_string(r % (n / 4 + 1));
    key.append(r % 23, static_cast<char>('a' + r % 26));
    m[key].push_back(i);
    u[r % 50000] = key + "/" + std::to_string(i);
    if (i % 3 == 0) owned.push_back(std::make_unique<std::string>(key));
    if (i % 5 == 0 && !owned.empty()) owned.erase(owned.begin() + static_cast<long>(r % owned.size()));
  }
  std::uint64_t h = 0;
  for (const auto &kv : m) {
    h = fnv(kv.first, h);
    for (int v : kv.second) h = h * 31 + static_cast<std::uint64_t>(v);
  }
  std::vector<std::string> vals;
  vals.reserve(u.size());
  for (const auto &kv : u) vals.push_back(kv.second);
  std::sort(vals.begin(), vals.end());
  std::uint64_t hv = 0;
  for (const auto &s : vals) hv = fnv(s, hv);
  std::uint64_t ho = 0;
  for (const auto &p : owned) ho = fnv(*p, ho);
  // a few threads building strings and vectors of their own
  std::vector<std::uint64_t> part(4);
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; t++)
    ts.emplace_back([t, n, &part] {
      std::ostringstream os;
      std::vector<std::vector<int>> vv;
      for (int i = 0; i < n / 4; i++) {
        os << (i * (t + 1)) << ',';
        vv.emplace_back(static_cast<std::size_t>(i % 64), i);
        if (vv.size() > 1000) vv.erase(vv.begin(), vv.begin() + 500);
      }
      std::uint64_t x = fnv(os.str());
      for (const auto &v : vv) x = x * 131 + v.size();
      part[static_cast<std::size_t>(t)] = x;
    });
  for (auto &t : ts) t.join();
  std::printf("map %zu keys, checksum %016llx\n", m.size(), static_cast<unsigned long long>(h));
  std::printf("unordered_map %zu, checksum %016llx\n", u.size(), static_cast<unsigned long long>(hv));
  std::printf("owned %zu, checksum %016llx\n", owned.size(), static_cast<unsigned long long>(ho));
  for (int t = 0; t < 4; t++) std::printf("thread %d checksum %016llx\n", t, static_cast<unsigned long long>(part[static_cast<std::size_t>(t)]));
  return 0;
}
