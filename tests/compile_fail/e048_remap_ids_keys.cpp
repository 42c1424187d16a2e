// expect: tenon-E048
// A table with string keys cannot look up integer ids.
#include <map>
#include <string>
#include <tenon/tenon.hpp>
using namespace tenon;

std::map<std::string, int> table{{"a", 1}};
auto model = remap_ids<Ints1d>(table, 0);
