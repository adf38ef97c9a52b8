// The scripted protocol nd_peer (ndnic, ND v1 + ndnic_ext.h) and verbs_peer (libibverbs on rxe,
// ../verbs_peer/verbs_peer.c) follow, one scenario per connection. The same text heads
// verbs_peer.c; change both together.
//
// Scenario names are NAME-WHO, WHO the active side: "rxe" (verbs_peer) or "nd" (nd_peer).
// Both sides create the QP/endpoint with 32 receives and 32 sends, one SGE each, 4 READs/atomics
// in flight each way, and post a pool of kPoolSlots receives of kSlotSize bytes before
// connecting (except where a scenario says the passive side posts none); a consumed slot is
// posted again at the tail. Control messages are SENDs of 28 bytes, all fields in network order:
//   u32 kind (1 WINDOW, 2 GO, 3 DONE), u32 value, then ND_MW_DESCRIPTOR {u64 base, u64 length,
//   u32 token} (a verbs peer: base = the address, token = the rkey).
// A = the active side, P = the passive side.
//  mw        P binds a window (read+write) over 8 KiB of its buffer filled with pattern 1, sends
//            WINDOW. A WRITEs 2 KiB of pattern 2 at offset 0, READs 4 KiB at offset 0 (pattern 2
//            then pattern 1), SendAndInvalidate-s 16 bytes naming the token. P's receive reports
//            the invalidated token (ND: the window's invalidate result completes first), P checks
//            the written bytes, sends GO. A WRITEs 64 bytes through the old token: remote access
//            error; both QPs go to error, every receive posted on either side comes back flushed.
//  imm       P binds a 16 KiB window (write), sends WINDOW. A sends SEND_WITH_IMM of 0,1,2,3,5,7,
//            2500 bytes (imm 0x5E000000|len), then RDMA_WRITE_WITH_IMM of the same sizes at offset
//            512*i (2500 bytes at 8192; imm 0xA0000000|len). P checks each receive (kind, length,
//            immediate, bytes) and sends DONE.
//  atomic    P exposes 4 KiB (rxe: its MR with REMOTE_ATOMIC; ND: a window bound with
//            NDNIC_OP_FLAG_ALLOW_ATOMIC) holding the u64 100 at offset 64, sends WINDOW. A: CAS
//            100->200 (returns 100), CAS 100->300 (miss, returns 200), FAA 5 (returns 200), FAA
//            2^32 (returns 205), READ 8 bytes (0x1000000CD), sends GO. P checks its memory holds
//            0x1000000CD and sends DONE.
//  solicited P arms its receive CQ for solicited results only, sends GO. A sends 32 bytes without
//            SE and waits for the ACK. P sees no event for 500 ms though the receive completed,
//            sends GO. A sends 32 bytes with SE; P's notify fires; P sends DONE.
//  rnr       (guest is the client, rnr_retry_count 7.) P posts no receive. A SENDs 64 bytes at
//            once; P posts a receive 400 ms after the connection is up. A's send succeeds after
//            >= 200 ms (RNR NAKs meanwhile); P checks the bytes and sends DONE.
//  rnrx      (guest is the client, rnr_retry_count 0, which ndnic's passive side takes from the
//            REQ.) P posts no receive. A SENDs 64 bytes: RNR retry exceeded (rxe
//            IBV_WC_RNR_RETRY_EXC_ERR, ND ND_TIMEOUT), A's receives come back flushed. P posts a
//            receive after 2 s: nothing arrives in 1 s.
//  access    P binds a window (write) and sends WINDOW. A WRITEs 64 bytes with the token ^ 0x80:
//            remote access error; both QPs go to error, every posted receive comes back flushed.
// Patterns: byte i of pattern s is (i * 31 + s * 17 + 1) & 0xff.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ndnic::nd_peer {

constexpr uint16_t kDefaultPort = 7400;
constexpr unsigned kPoolSlots = 16;
constexpr size_t kSlotSize = 4096;
constexpr size_t kQueueDepth = 32;
constexpr size_t kReadDepth = 4;
constexpr size_t kSendAreaSize = 8192;
constexpr size_t kAreaSize = 64 * 1024;
constexpr int kWaitMs = 10000;

constexpr size_t kCtlSize = 28;
enum class Ctl : uint32_t { kWindow = 1, kGo = 2, kDone = 3 };

constexpr uint32_t kImmSizes[] = {0, 1, 2, 3, 5, 7, 2500};
constexpr unsigned kImmCount = sizeof kImmSizes / sizeof kImmSizes[0];
constexpr uint64_t imm_offset(unsigned i) { return kImmSizes[i] > 1024 ? 8192 : 512u * i; }
constexpr uint32_t kImmSendTag = 0x5E000000;
constexpr uint32_t kImmWriteTag = 0xA0000000;

constexpr uint8_t pattern_byte(size_t i, unsigned seed) { return uint8_t((i * 31 + seed * 17 + 1) & 0xff); }
inline void fill_pattern(uint8_t* p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) p[i] = pattern_byte(i, seed);
}
/// Whether p holds bytes [from, from + n) of pattern `seed`.
inline bool is_pattern(const uint8_t* p, size_t n, unsigned seed, size_t from = 0) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != pattern_byte(from + i, seed)) return false;
  return true;
}

}  // namespace ndnic::nd_peer
