// The stateful transport fuzzer's input format: a small program of steps, read byte by byte.
// A read past the end gives zeros, so every input is a valid program, and a mutation that
// changes one step leaves the steps after it readable (they may shift, which the fuzzer
// tolerates). tests/fuzz/stateful/seeds.py writes the same format (keep the two in step).
//
// Input  = header step*
// header = 8 bytes:
//   [0] path MTU: {256, 512, 1024, 2048, 4096}[b % 5]
//   [1] victim send queue depth: 1 + b % 64       [2] receive queue depth: 1 + b % 64
//   [3] PSN base: the QPs' first PSNs are near 0xFFFFFF (wrap) for small values
//   [4] retry_cnt = b & 7, rnr_retry = (b >> 3) & 7
//   [5] max_rd_atomic (and max_dest_rd_atomic) = 1 + b % 16
//   [6] teardown: b % 4: 0 ERROR (then every posted WR must have completed), 1 destroy the QPs
//       as they are, 2 RESET, 3 close the device with the QPs alive
//   [7] bit 0: the QPs are made without the peer's MAC (ARP, or learnt from the first frame)
// step   = kind byte (kind = b % 16, see Step) + its operands (transport_fuzzer.cc: one
//          function per step, reading them in order).
//
// Operand encodings shared by several steps ("sel" = selector):
//   side     u8: b % 4 == 3 ? QP B (bystander) : QP A (victim)
//   key sel  u8: category = b >> 5, index = b & 31
//            0,1 a live region's key   2 a window's current key   3 the key a pending bind asks for
//            4 a dead key (deregistered region, deallocated/rebound window)   5 a live key with
//            another key byte   6 raw u32 follows   7 a window's handle (the key alloc_mw returned)
//   addr sel u8 mode + u16 offset, relative to the object the key names (its range, or the
//            arena): 0,1 inside  2 its start  3 near its end (straddles)  4 just before it
//            5 anywhere in the arena  6 raw u64 follows  7 one past its end
//   len sel  u8 mode + u16 value: 0 1..64  1 1..4 path MTUs  2 0..8191  3 zero  4 raw u32 follows
//            5 to the object's end  6 eight  7 past the object's end
#pragma once

#include <cstddef>
#include <cstdint>

namespace ndnic::fuzz {

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool done() const { return pos_ >= size_; }
  size_t pos() const { return pos_; }
  uint8_t u8() { return pos_ < size_ ? data_[pos_++] : 0; }
  uint16_t u16() {
    const uint16_t lo = u8();
    return uint16_t(lo | uint16_t(u8()) << 8);
  }
  uint32_t u24() {
    const uint32_t lo = u16();
    return lo | uint32_t(u8()) << 16;
  }
  uint32_t u32() {
    const uint32_t lo = u16();
    return lo | uint32_t(u16()) << 16;
  }
  uint64_t u64() {
    const uint64_t lo = u32();
    return lo | uint64_t(u32()) << 32;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

constexpr size_t kHeaderLen = 8;

enum class Step : uint8_t {
  kInject = 0,      ///< a frame from the peer to a QP (any opcode, PSN, key, lengths, damage)
  kPostSend = 1,    ///< a send-side WR on a QP (SEND/WRITE/READ/atomic/bind/local invalidate)
  kPostRecv = 2,    ///< a receive
  kRegMr = 3,       ///< register a region of the arena
  kDeregMr = 4,
  kAllocMw = 5,
  kDeallocMw = 6,
  kBind = 7,        ///< a well-formed bind of a window to part of a live region
  kLocalInv = 8,    ///< a local invalidate
  kPoll = 9,        ///< 1..16 engine iterations
  kFireTimers = 10, ///< expire the QP's retransmission and RNR timers now
  kModifyQp = 11,   ///< ERROR, or RESET and reconnect
  kRecreateQp = 12, ///< destroy the QP and make a new one in its place
  kRespond = 13,    ///< a well-formed response to the QP's oldest outstanding request
  kInject2 = 14,    ///< = kInject (injection is the step that matters most)
  kPostSend2 = 15,  ///< = kPostSend
};
constexpr unsigned kStepKinds = 16;

/// Opcodes an inject step chooses from (index = b % 25; 24: a raw opcode byte follows).
constexpr uint8_t kInjectOpcodes[] = {0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
                                      0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F,
                                      0x10, 0x11, 0x12, 0x13, 0x14, 0x16, 0x17, 0x64};
constexpr unsigned kInjectOpcodeChoices = sizeof(kInjectOpcodes) + 1;

}  // namespace ndnic::fuzz
