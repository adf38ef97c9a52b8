// The layouts of the extension headers that follow the BTH (IBTA vol. 1 9.3-9.4, 9.5 for the
// AETH), one writer each. The general encoder (encode.cc) writes a RocePacket's through them;
// the engine's template paths (nic/tx.cc: SEND, WRITE, ACK, READ response) write the few their
// packets carry from plain values, without a RocePacket. Each returns the byte after the header.
#pragma once

#include <cstdint>

#include "ndnic/wire/headers.h"

namespace ndnic::wire {

/// DETH: Q_Key, a reserved byte, the source QP.
inline uint8_t* write_deth(uint8_t* o, uint32_t qkey, uint32_t src_qp) {
  store_be32(o, qkey);
  store_be32(o + 4, src_qp & kPsnMask);  // the reserved byte is the word's top
  return o + kDethLen;
}

/// RETH: the virtual address, R_Key and DMA length of a WRITE or READ request.
inline uint8_t* write_reth(uint8_t* o, uint64_t va, uint32_t rkey, uint32_t dma_len) {
  store_be64(o, va);
  store_be32(o + 8, rkey);
  store_be32(o + 12, dma_len);
  return o + kRethLen;
}

/// AtomicETH: the virtual address, R_Key, swap (or add) and compare values.
inline uint8_t* write_atomic_eth(uint8_t* o, uint64_t va, uint32_t rkey, uint64_t swap_add, uint64_t compare) {
  store_be64(o, va);
  store_be32(o + 8, rkey);
  store_be64(o + 12, swap_add);
  store_be64(o + 20, compare);
  return o + kAtomicEthLen;
}

/// AETH: the syndrome (ACK, RNR NAK or NAK, with its credit, timer or code) and the MSN.
inline uint8_t* write_aeth(uint8_t* o, uint8_t syndrome, uint32_t msn) {
  store_be32(o, uint32_t(syndrome) << 24 | (msn & kPsnMask));
  return o + kAethLen;
}

/// AtomicAckETH: the original value at the target.
inline uint8_t* write_atomic_ack_eth(uint8_t* o, uint64_t orig) {
  store_be64(o, orig);
  return o + kAtomicAckEthLen;
}

/// ImmDt: the immediate data, as RocePacket::imm holds it.
inline uint8_t* write_immdt(uint8_t* o, uint32_t imm) {
  store_be32(o, imm);
  return o + kImmDtLen;
}

/// IETH: the R_Key a SEND with Invalidate names.
inline uint8_t* write_ieth(uint8_t* o, uint32_t rkey) {
  store_be32(o, rkey);
  return o + kIethLen;
}

}  // namespace ndnic::wire
