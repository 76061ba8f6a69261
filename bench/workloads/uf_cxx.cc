/*
 * uf_cxx.cc - bench/unnamed_frames.sh: a C++ program whose time is in
 * its own templates, namespace and static functions and in what C++
 * programs spend time on in libstdc++: std::map of std::string (tree
 * rebalancing, string compares), std::sort, std::unordered_map and
 * std::ostringstream formatting.
 *
 * Usage: uf_cxx (runs until killed)
 */
#include <algorithm>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace uf {
template <typename T> struct Acc {
	T v{};
	__attribute__((noinline)) void add(T x) { v = v * 31 + x; }
};

static __attribute__((noinline)) uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	return x ^ (x >> 29);
}

__attribute__((noinline)) uint64_t churn(std::vector<uint64_t> &v)
{
	Acc<uint64_t> a;
	for (auto &e : v) {
		e = mix(e + 1);
		a.add(e);
	}
	return a.v;
}

/* words of a made-up text, counted, sorted and formatted */
__attribute__((noinline)) size_t words(uint64_t seed)
{
	std::map<std::string, int> count;
	std::unordered_map<uint64_t, std::string> by_hash;
	std::vector<std::string> all;
	std::ostringstream out;

	for (int i = 0; i < 3000; i++) {
		uint64_t h = mix(seed + (uint64_t)i % 700);
		std::string w;
		for (int k = 0; k < 3 + (int)(h % 7); k++)
			w += (char)('a' + (h >> (k * 5)) % 26);
		count[w]++;
		by_hash.emplace(h, w);
		all.push_back(std::move(w));
	}
	std::sort(all.begin(), all.end());
	for (const auto &kv : count)
		out << kv.first << '=' << kv.second << ' ' << 1.0 / kv.second << '\n';
	return out.str().size() + by_hash.size() + all.size();
}
} // namespace uf

int main()
{
	std::vector<uint64_t> v(4096, 1);
	volatile uint64_t sink = 0;

	for (uint64_t n = 0;; n++) {
		sink = sink + uf::churn(v);
		sink = sink + uf::words(n);
	}
}
