/*
 * lambda_sort.cpp - std::sort with a lambda comparator (g++ -O2
 * -fomit-frame-pointer): main -> sort_outer -> sort_inner -> std::sort
 * internals (those GCC did not inline) -> the lambda (noipa: not inlined, not cloned; spins a
 * little per comparison).
 * Usage: lambda_sort SECONDS
 */
#include <algorithm>
#include <vector>

#include "common.h"

NOINL void sort_inner(std::vector<int> &v)
{
	std::sort(v.begin(), v.end(), [](int a, int b) NOINL {
		SPIN_N(3000);
		return a < b;
	});
	sink += v[0];
}

NOINL void sort_outer(double end)
{
	std::vector<int> v(1000);
	unsigned seed = 1;

	while (now() < end) {
		for (int &x : v)
			x = (int)((seed = seed * 1103515245u + 12345u) >> 8);
		sort_inner(v);
	}
	sink++;
}

int main(int argc, char **argv)
{
	sort_outer(now() + arg_seconds(argc, argv));
	return 0;
}
