#include <regex>
#include <map>
#include <unordered_map>
#include <string>
#include <vector>
#include <algorithm>
#include <iostream>
#include <sstream>
#include <functional>
#include <memory>
#include <set>
#include <variant>
#include <optional>
#include <tuple>
template <int N> struct F { static int v() { return F<N-1>::v() + N; } };
template <> struct F<0> { static int v() { return 0; } };
int main(int argc, char **argv) {
  std::map<std::string, std::vector<int>> m;
  std::unordered_map<int, std::string> u;
  std::regex re("([a-z]+)([0-9]*)");
  std::vector<std::variant<int, std::string, double>> v;
  for (int i = 0; i < argc * 100; i++) { m[std::to_string(i)].push_back(i); u[i] = std::to_string(i); v.push_back(i); }
  std::smatch sm; std::string s = "abc123";
  std::regex_match(s, sm, re);
  std::sort(v.begin(), v.end());
  std::cout << F<300>::v() << m.size() << u.size() << sm.size() << std::endl;
}
