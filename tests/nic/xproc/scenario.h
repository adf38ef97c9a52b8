// What the client does and the server expects, derived on both sides from the same constants
// and seeds, so neither has to tell the other more than its keys and addresses.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "ndnic/verbs.h"

namespace ndnic::nic::xproc {

// Three QPs per side: the directed phases at both path MTUs, then the mixed run.
constexpr uint32_t kQps = 3;
constexpr uint32_t kMtu[kQps] = {1024, 4096, 1024};
constexpr uint32_t kMixedQp = 2;

// Each QP owns a region of both buffers, laid out the same way on both sides.
constexpr uint64_t kRegion = 4u << 20;
constexpr uint64_t kBufSize = kQps * kRegion;
constexpr uint64_t kSlotArea = 0;          ///< server: receive slots; client: send sources
constexpr uint32_t kSlots = 64;
constexpr uint32_t kSlot = 16 * 1024;      ///< the largest SEND
constexpr uint64_t kBulkArea = 1u << 20;   ///< the 1 MiB WRITE target; the mixed run's WRITEs
constexpr uint32_t kBulk = 1u << 20;
constexpr uint64_t kReadArea = 2u << 20;   ///< server: READ source; client: READ sink
constexpr uint64_t kImmArea = 3u << 20;    ///< WRITE WITH IMMEDIATE targets, one slot each
constexpr uint64_t kAtomicArea = kImmArea + kSlots * kSlot / 8;  ///< 8-byte words
constexpr uint64_t kCasWord = kAtomicArea, kFaaWord = kAtomicArea + 8, kMixedCounter = kAtomicArea + 16;
constexpr uint64_t kAtomicResults = kAtomicArea + 64;  ///< client: where atomics return originals

constexpr uint64_t kCasInitial = 0x1122334455667788, kCasSwap = 0x0badc0ffee0ddf00;
constexpr uint64_t kFaaInitial = 1000, kFaaAdd[2] = {5, 7};

/// Fills memory both sides can predict: a per-purpose seed, a message number, a byte offset.
inline uint8_t pattern(uint32_t seed, uint32_t msg, uint32_t i) {
  return uint8_t(seed * 17 + msg * 131 + i * 7 + (i >> 8));
}
constexpr uint32_t kSendSeed = 1, kBulkSeed = 2, kImmSeed = 3, kReadSeed = 4, kMixedSeed = 5;
/// Each QP writes its own pattern, so data that landed through the wrong QP shows.
constexpr uint32_t seed_for(uint32_t base, uint32_t q) { return base + 10 * q; }

inline void fill(uint8_t* p, uint32_t len, uint32_t seed, uint32_t msg, uint32_t from = 0) {
  for (uint32_t k = 0; k < len; k++) p[k] = pattern(seed, msg, from + k);
}
/// The first byte that differs from the pattern, or -1.
inline int64_t mismatch(const uint8_t* p, uint32_t len, uint32_t seed, uint32_t msg, uint32_t from = 0) {
  for (uint32_t k = 0; k < len; k++)
    if (p[k] != pattern(seed, msg, from + k)) return k;
  return -1;
}

/// Phase 1: SEND sizes, the edges around both MTUs and the 16 KiB maximum, then random ones.
inline std::vector<uint32_t> send_sizes() {
  std::vector<uint32_t> s = {0, 1, 2, 63, 64, 255, 256, 1023, 1024, 1025, 2047, 2048, 4095,
                             4096, 4097, 8191, 8192, 8193, 12288, 16383, 16384};
  std::mt19937 rng(11);
  while (s.size() < 100) s.push_back(rng() % (kSlot + 1));
  return s;
}
/// Phase 3: WRITE WITH IMMEDIATE sizes; the immediate is kImmBase + index.
constexpr uint32_t kImmSizes[] = {0, 1, 1000, 1024, 5000, 16384};
constexpr uint32_t kImmBase = 0x51000000, kBulkDoneImm = 0x5b000000, kAtomicsDoneLen = 8;

// Phase 5, the mixed run: opcodes and sizes as in tests/nic/fault_test.cc.
constexpr uint32_t kMixedMessages = 10000;
constexpr uint32_t kMixedInFlight = 32;
constexpr uint32_t kMixedMax = 4096;
constexpr uint32_t kMixedWriteSlots = kBulk / kMixedMax;  ///< 256: reused long after checking

struct Msg {
  WrOpcode op;
  uint32_t len;
};
/// The last message is a SEND, so the server has seen every WRITE land when it checks it.
inline std::vector<Msg> mixed_plan() {
  std::mt19937 rng(7);
  std::vector<Msg> plan(kMixedMessages);
  for (Msg& m : plan) {
    const unsigned k = rng() % 100;
    m.op = k < 40 ? WrOpcode::kSend : k < 60 ? WrOpcode::kWriteImm : k < 80 ? WrOpcode::kWrite
           : k < 95 ? WrOpcode::kRead : WrOpcode::kFetchAdd;
    m.len = m.op == WrOpcode::kFetchAdd ? 8 : (rng() % 4 == 0 ? rng() % kMixedMax : rng() % 300);
  }
  plan.back() = {WrOpcode::kSend, 16};
  return plan;
}
inline bool consumes_receive(WrOpcode op) { return op == WrOpcode::kSend || op == WrOpcode::kWriteImm; }
/// A READ's source offset in the server's read area: varied so misplaced offsets show.
inline uint64_t mixed_read_offset(uint32_t i) { return (i % 97) * 64; }

}  // namespace ndnic::nic::xproc
