// The one opcode table: for each RoCEv2 opcode ndnic speaks (RC, and UD SEND ONLY for the
// CM's QP1), which extension headers follow the BTH, where the packet sits in its message,
// and whether it carries payload.
#pragma once

#include <array>
#include <cstdint>

namespace ndnic::wire {

/// Opcode values (IBTA vol. 1 table 38): RC = 0x00 + op, UD = 0x60 + op.
enum Opcode : uint8_t {
  kRcSendFirst = 0x00,
  kRcSendMiddle = 0x01,
  kRcSendLast = 0x02,
  kRcSendLastImm = 0x03,
  kRcSendOnly = 0x04,
  kRcSendOnlyImm = 0x05,
  kRcWriteFirst = 0x06,
  kRcWriteMiddle = 0x07,
  kRcWriteLast = 0x08,
  kRcWriteLastImm = 0x09,
  kRcWriteOnly = 0x0A,
  kRcWriteOnlyImm = 0x0B,
  kRcReadRequest = 0x0C,
  kRcReadResponseFirst = 0x0D,
  kRcReadResponseMiddle = 0x0E,
  kRcReadResponseLast = 0x0F,
  kRcReadResponseOnly = 0x10,
  kRcAck = 0x11,
  kRcAtomicAck = 0x12,
  kRcCompareSwap = 0x13,
  kRcFetchAdd = 0x14,
  kRcSendLastInv = 0x16,
  kRcSendOnlyInv = 0x17,
  kUdSendOnly = 0x64,
};

/// Extension headers, in the order they follow the BTH.
enum ExtHeader : uint8_t {
  kHdrDeth = 1u << 0,
  kHdrReth = 1u << 1,
  kHdrAtomicEth = 1u << 2,
  kHdrAeth = 1u << 3,
  kHdrAtomicAckEth = 1u << 4,
  kHdrImmDt = 1u << 5,
  kHdrIeth = 1u << 6,
};

/// Where a packet sits in its message.
enum class Position : uint8_t { kFirst, kMiddle, kLast, kOnly };

/// What the message does; the requester, responder and completer switch on this.
enum class OpKind : uint8_t { kSend, kWrite, kReadRequest, kReadResponse, kAck, kAtomic, kAtomicAck };

struct OpcodeInfo {
  const char* name;        ///< IBTA-style name, e.g. "SEND_LAST_WITH_IMMEDIATE"; nullptr if unknown
  uint8_t ext;             ///< ExtHeader bits
  uint8_t ext_len;         ///< bytes of extension headers after the BTH
  Position position;       ///< FIRST / MIDDLE / LAST / ONLY
  OpKind kind;             ///< SEND, WRITE, READ request/response, ACK, atomic
  bool has_payload;        ///< may carry payload bytes (zero-length is allowed where true)
};

namespace detail {
/// The table itself (opcode.cc), declared here so that a lookup is one load where it is made:
/// every frame looks its opcode up twice (decode, then the engine's dispatch), and as a call
/// each lookup cost ~5 instructions of call, return and saved registers.
extern const std::array<OpcodeInfo, 256> kOpcodeTable;
}  // namespace detail

/// Looks an opcode up; info.name is nullptr for opcodes ndnic does not speak.
inline const OpcodeInfo& opcode_info(uint8_t opcode) { return detail::kOpcodeTable[opcode]; }
inline bool opcode_known(uint8_t opcode) { return opcode_info(opcode).name != nullptr; }

}  // namespace ndnic::wire
