// SPDX-License-Identifier: MIT
// The Boost anchors of `make bench` (mk/bench.sh), written for it: the same
// loops as weft's side in bench/micro.c, printing "bench: NAME VALUE UNIT".
//
// Usage: boost switch N    N ping-pongs between two contexts through
//                          Boost.Context's jump_fcontext (which also saves
//                          MXCSR and the x87 control word): ns per one-way switch
//        boost spawn N     N Boost.Fiber fibers on 64 KiB pooled stacks,
//                          created and joined in batches of 1,000 by the main
//                          fiber (one thread): ns per fiber
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <boost/context/detail/fcontext.hpp>
#include <boost/fiber/all.hpp>

namespace ctx = boost::context::detail;

static double now_ns()
{
	using namespace std::chrono;
	return (double)duration_cast<nanoseconds>(steady_clock::now().time_since_epoch()).count();
}

// ---- switch

static void co_body(ctx::transfer_t t)
{
	for (;;)
		t = ctx::jump_fcontext(t.fctx, nullptr);
}

static void row_switch(long n)
{
	const std::size_t size = 64 * 1024;
	void *stack = std::malloc(size);
	ctx::fcontext_t co = ctx::make_fcontext(static_cast<char *>(stack) + size, size, co_body);
	double t0 = now_ns();
	for (long i = 0; i < n; i++)
		co = ctx::jump_fcontext(co, nullptr).fctx;
	double t1 = now_ns();
	std::free(stack);
	std::printf("bench: switch %.3f ns\n", (t1 - t0) / (2.0 * (double)n));
}

// ---- spawn

static std::atomic<long> sink{0};

static void row_spawn(long n)
{
	const long batch = 1000;
	boost::fibers::pooled_fixedsize_stack stacks(64 * 1024);
	std::vector<boost::fibers::fiber> f;
	f.reserve(batch);
	double t0 = now_ns();
	for (long done = 0; done < n; done += batch) {
		long b = n - done < batch ? n - done : batch;
		for (long i = 0; i < b; i++)
			f.emplace_back(std::allocator_arg, stacks,
				       [] { sink.fetch_add(1, std::memory_order_relaxed); });
		for (auto &x : f)
			x.join();
		f.clear();
	}
	double t1 = now_ns();
	if (sink.load() != n)
		std::abort();
	std::printf("bench: spawn %.3f ns\n", (t1 - t0) / (double)n);
}

int main(int argc, char **argv)
{
	const char *row = argc > 1 ? argv[1] : "";
	long n = argc > 2 ? std::atol(argv[2]) : 100000;
	if (!std::strcmp(row, "switch"))
		row_switch(n);
	else if (!std::strcmp(row, "spawn"))
		row_spawn(n);
	else {
		std::fprintf(stderr, "usage: boost switch|spawn N\n");
		return 2;
	}
	return 0;
}
