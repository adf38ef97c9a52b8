// A received payload copied out to where it belongs (a receive's SGEs, a READ's sink, a
// WRITE's target), with its ICRC checked in the same pass where decode left it pending: one
// read of the payload for the copy and the CRC (wire::crc32_copy) instead of one for each.
//
// Only bytes no one may act on yet are written before the check. If the ICRC then fails, the
// packet is dropped as if never received (no state moves, no completion, no NAK) and the bytes
// it left are overwritten by the retransmission, which must come for the same PSN to the same
// place before anything after it is taken:
// - a SEND's receive and a READ's sink are the application's only at their completion;
// - a WRITE's MIDDLE and LAST go where the FIRST's RETH (checked before any byte was placed)
//   and the PSN say, never where their own bytes say. A WRITE's target is visible at once, and
//   an application may poll its last byte: a LAST's final byte is stored only after the check,
//   so a poller never sees a message whose bytes are not all intact. A FIRST or ONLY names its
//   target itself, and a LAST with immediate data takes a receive: those are checked first.
#pragma once

#include <cstdint>
#include <cstring>

#include "wire/icrc.h"
#include "ndnic/wire/opcode.h"
#include "ndnic/wire/packet.h"

namespace ndnic::nic {

/// Whether a packet of this opcode may keep a pending ICRC for its payload's copy (above).
inline bool copy_checks_icrc(const wire::OpcodeInfo& info) {
  switch (info.kind) {
    case wire::OpKind::kSend:
    case wire::OpKind::kReadResponse:
      return true;
    case wire::OpKind::kWrite:
      return info.position == wire::Position::kMiddle ||
             (info.position == wire::Position::kLast && !(info.ext & wire::kHdrImmDt));
    default:
      return false;
  }
}

class PayloadCopy {
 public:
  explicit PayloadCopy(const wire::RocePacket& p) : p_(p), crc_(p.icrc_partial) {}
  /// The next `n` bytes of the payload, in order, to `dst`.
  void copy(uint8_t* dst, const uint8_t* src, uint32_t n) {
    if (p_.icrc_pending)
      crc_ = wire::crc32_copy(crc_, dst, src, n);
    else
      std::memcpy(dst, src, n);
  }
  /// After the whole payload went through copy(): whether the packet is intact.
  bool icrc_ok() const { return !p_.icrc_pending || wire::icrc_finish(p_, crc_); }

 private:
  const wire::RocePacket& p_;
  uint32_t crc_;
};

}  // namespace ndnic::nic
