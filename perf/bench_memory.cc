// Memory keys at table level (nic/memory.h), without EAL or a device: the R_Key check the
// responder makes for every WRITE, READ and atomic (against a region and against a type-2
// window), the L_Key check the requester makes for every SGE it fetches, and a window's bind
// and invalidate (the ND Bind / Invalidate of every I/O that exposes memory per request).
//
// Lookups go over 1 or 4096 keys in a shuffled order: one key stays in L1, thousands of keys
// used in no particular order (many connections, many windows) do not.
#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "nic/memory.h"

namespace ndnic::nic {
namespace {

constexpr uint32_t kPd = 1;
constexpr uint32_t kQpn = 0x11;
constexpr uint32_t kSlice = 4096;           ///< bytes of the buffer each region or window covers
constexpr uint32_t kMaxKeys = 4096;         ///< largest table exercised
constexpr uint32_t kAccessLen = 64;         ///< bytes each check covers (a small WRITE)
constexpr uint32_t kRemote = kAccessRemoteRead | kAccessRemoteWrite;
constexpr uint32_t kRegionAccess = kAccessLocalWrite | kRemote | kAccessMwBind;
// Dozens of cases at nanoseconds each: a fraction of a second still gives millions of calls.
constexpr double kMinTime = 0.1;

/// The same keys in an order with no pattern a prefetcher could follow.
std::vector<uint32_t> shuffled(std::vector<uint32_t> keys) {
  std::mt19937 rng(7);
  std::shuffle(keys.begin(), keys.end(), rng);
  return keys;
}

/// A table with `n` regions, each over its own kSlice of one buffer, and `n` windows in the
/// same PD, unbound.
struct Table {
  MemoryTable mem;
  std::vector<uint8_t> buf;
  std::vector<uint32_t> mr_keys;   ///< in registration order: mr_keys[i] covers slice i
  std::vector<uint32_t> mw_keys;   ///< current key of each window

  bool init(uint32_t n) {
    if (!mem.init(kMaxKeys, kMaxKeys, nullptr)) return false;  // no lcores: no RCU
    buf.assign(size_t(n) * kSlice, 0);
    for (uint32_t i = 0; i < n; i++) {
      uint32_t key;
      if (!mem.register_mr(kPd, buf.data() + size_t(i) * kSlice, kSlice, kRegionAccess, &key)) return false;
      mr_keys.push_back(key);
      const uint32_t mw = mem.alloc_mw(kPd, i);
      if (mw == 0) return false;
      mw_keys.push_back(mw);
    }
    return true;
  }
  uint64_t slice(uint32_t i) const { return reinterpret_cast<uint64_t>(buf.data()) + uint64_t(i) * kSlice; }
  /// Binds window i over slice i of region i for kQpn; its key changes.
  KeyCheck bind(uint32_t i) {
    const uint8_t byte = uint8_t(key_byte(mw_keys[i]) + 1);  // any byte but the current one
    return mem.bind_mw(kPd, kQpn, mw_keys[i], mr_keys[i], slice(i), kSlice, kRemote, byte, &mw_keys[i]);
  }
  KeyCheck invalidate(uint32_t i) {
    uint64_t ctx;
    return mem.invalidate_mw(kPd, kQpn, mw_keys[i], &ctx);
  }
};

void fail(benchmark::State& state, const char* what, KeyCheck k) {
  state.SkipWithError((std::string(what) + ": " + key_check_name(k)).c_str());
}

/// A lookup loop: checks the key of each slot in `order` inside the slice it covers, cycling.
template <typename Check>
void lookups(benchmark::State& state, const std::vector<uint32_t>& order, const Table& t, Check check) {
  size_t i = 0;
  for (auto _ : state) {
    const uint32_t slot = order[i];
    Resolved out;
    const KeyCheck r = check(slot, t.slice(slot) + 128, &out);
    if (r != KeyCheck::kOk) {  // every call is checked: a failed lookup returns early and would flatter
      fail(state, "lookup", r);
      break;
    }
    benchmark::DoNotOptimize(out.host);
    if (++i == order.size()) i = 0;
  }
  state.SetItemsProcessed(state.iterations());
}

/// Slot numbers 0..n-1 in shuffled order.
std::vector<uint32_t> slots(uint32_t n) {
  std::vector<uint32_t> v(n);
  for (uint32_t i = 0; i < n; i++) v[i] = i;
  return shuffled(std::move(v));
}

// The responder's CHECK_RKEY for a WRITE through a region's R_Key.
void BM_mr_check_remote(benchmark::State& state) {
  Table t;
  const uint32_t n = uint32_t(state.range(0));
  if (!t.init(n)) return state.SkipWithError("table setup failed");
  lookups(state, slots(n), t, [&](uint32_t i, uint64_t va, Resolved* out) {
    return t.mem.check_remote(kPd, kQpn, t.mr_keys[i], va, kAccessLen, kAccessRemoteWrite, out);
  });
}

// The same through a bound type-2 window: the seqlock-style copy of the window, its QP binding.
void BM_mw_check_remote(benchmark::State& state) {
  Table t;
  const uint32_t n = uint32_t(state.range(0));
  if (!t.init(n)) return state.SkipWithError("table setup failed");
  for (uint32_t i = 0; i < n; i++)
    if (const KeyCheck k = t.bind(i); k != KeyCheck::kOk) return fail(state, "bind", k);
  lookups(state, slots(n), t, [&](uint32_t i, uint64_t va, Resolved* out) {
    return t.mem.check_remote(kPd, kQpn, t.mw_keys[i], va, kAccessLen, kAccessRemoteWrite, out);
  });
}

// The requester's FETCH (and the responder's scatter) for one SGE: an L_Key with local write.
void BM_mr_check_local(benchmark::State& state) {
  Table t;
  const uint32_t n = uint32_t(state.range(0));
  if (!t.init(n)) return state.SkipWithError("table setup failed");
  lookups(state, slots(n), t, [&](uint32_t i, uint64_t va, Resolved* out) {
    return t.mem.check_local(kPd, t.mr_keys[i], va, kAccessLen, true, out);
  });
}

// Bind and invalidate each change one window's state word with a CAS; timed one phase at a time
// over every window of the table (the other phase, which restores the state, is not timed).
enum class Phase { kBind, kInvalidate };

template <Phase P>
void BM_mw_phase(benchmark::State& state) {
  Table t;
  const uint32_t n = uint32_t(state.range(0));
  if (!t.init(n)) return state.SkipWithError("table setup failed");
  const auto order = slots(n);
  for (auto _ : state) {
    if (P == Phase::kInvalidate) {
      state.PauseTiming();
      for (uint32_t i : order)
        if (const KeyCheck k = t.bind(i); k != KeyCheck::kOk) return fail(state, "bind", k);
      state.ResumeTiming();
    }
    for (uint32_t i : order) {
      const KeyCheck k = P == Phase::kBind ? t.bind(i) : t.invalidate(i);
      if (k != KeyCheck::kOk) return fail(state, P == Phase::kBind ? "bind" : "invalidate", k);
    }
    if (P == Phase::kBind) {
      state.PauseTiming();
      for (uint32_t i : order)
        if (const KeyCheck k = t.invalidate(i); k != KeyCheck::kOk) return fail(state, "invalidate", k);
      state.ResumeTiming();
    }
  }
  state.SetItemsProcessed(state.iterations() * n);
  // The Time column is per pass over the table; this is per window.
  state.counters["per_window"] = benchmark::Counter(
      double(n), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// One window bound and invalidated again and again: the per-I/O cycle of an ND application
// that exposes a buffer for one request (Bind, the peer's access, Invalidate).
void BM_mw_bind_invalidate(benchmark::State& state) {
  Table t;
  if (!t.init(1)) return state.SkipWithError("table setup failed");
  for (auto _ : state) {
    if (const KeyCheck k = t.bind(0); k != KeyCheck::kOk) return fail(state, "bind", k);
    if (const KeyCheck k = t.invalidate(0); k != KeyCheck::kOk) return fail(state, "invalidate", k);
  }
  state.SetItemsProcessed(state.iterations());
}

void table_sizes(benchmark::internal::Benchmark* b) {
  b->ArgName("keys")->Arg(1)->Arg(kMaxKeys)->MinTime(kMinTime);
}

BENCHMARK(BM_mr_check_remote)->Apply(table_sizes);
BENCHMARK(BM_mw_check_remote)->Apply(table_sizes);
BENCHMARK(BM_mr_check_local)->Apply(table_sizes);
BENCHMARK(BM_mw_phase<Phase::kBind>)->Name("BM_mw_bind")->ArgName("windows")->Arg(kMaxKeys)->MinTime(kMinTime);
BENCHMARK(BM_mw_phase<Phase::kInvalidate>)->Name("BM_mw_invalidate")->ArgName("windows")->Arg(kMaxKeys)->MinTime(kMinTime);
BENCHMARK(BM_mw_bind_invalidate)->MinTime(kMinTime);

}  // namespace
}  // namespace ndnic::nic
