// A received payload copied out to where it belongs (a receive's SGEs, a READ's sink), with
// its ICRC checked in the same pass where decode left it pending: one read of the payload for
// the copy and the CRC (wire::crc32_copy) instead of one for each.
//
// Only memory the application may not look at yet is written this way: a receive or a READ
// sink before its completion. If the ICRC then fails, the packet is dropped as if never
// received (no state moves, no completion) and the bytes it left are overwritten by the
// retransmission. A WRITE's target is visible at once (an application may poll its last
// byte), so a WRITE's ICRC is checked before any byte is placed.
#pragma once

#include <cstdint>
#include <cstring>

#include "wire/icrc.h"
#include "ndnic/wire/packet.h"

namespace ndnic::nic {

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
