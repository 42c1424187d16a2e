// expect: tenon-E042
// Two Index lists: numpy pairs them element by element; tenon asks for two getitems.
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto g = floats_getitem(Index{0, 1}, Index{2, 3});
}
