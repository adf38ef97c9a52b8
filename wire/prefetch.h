// Asking for a cache line in a state this core may write, before writing it. Where the line was
// last read by another core (a transmit mbuf the receiving core freed, a buffer it copied out
// of), a read prefetch leaves it shared, and the write that follows waits for that core a
// second time.
#pragma once

namespace ndnic::wire {

/// x86 PREFETCHW (a no-op where the CPU lacks it), as one instruction: under the build's
/// -march=corei7 (no PRFCHW), __builtin_prefetch(p, 1) and DPDK's rte_prefetch0_write compile
/// to a read prefetch.
inline void prefetch_to_write(const void* p) {
#if defined(__x86_64__)
  asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p, 1, 3);
#endif
}

}  // namespace ndnic::wire
