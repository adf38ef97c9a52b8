#include "ndnic/wire/opcode.h"

#include <array>

#include "ndnic/wire/headers.h"

namespace ndnic::wire {
namespace {

constexpr uint8_t ext_len(uint8_t ext) {
  return uint8_t(((ext & kHdrDeth) ? kDethLen : 0) + ((ext & kHdrReth) ? kRethLen : 0) +
                 ((ext & kHdrAtomicEth) ? kAtomicEthLen : 0) + ((ext & kHdrAeth) ? kAethLen : 0) +
                 ((ext & kHdrAtomicAckEth) ? kAtomicAckEthLen : 0) +
                 ((ext & kHdrImmDt) ? kImmDtLen : 0) + ((ext & kHdrIeth) ? kIethLen : 0));
}

constexpr OpcodeInfo op(const char* name, uint8_t ext, Position pos, OpKind kind, bool payload) {
  return OpcodeInfo{name, ext, ext_len(ext), pos, kind, payload};
}

constexpr std::array<OpcodeInfo, 256> build_table() {
  std::array<OpcodeInfo, 256> t{};
  for (auto& e : t) e = OpcodeInfo{nullptr, 0, 0, Position::kOnly, OpKind::kSend, false};
  using P = Position;
  using K = OpKind;
  t[kRcSendFirst] = op("SEND_FIRST", 0, P::kFirst, K::kSend, true);
  t[kRcSendMiddle] = op("SEND_MIDDLE", 0, P::kMiddle, K::kSend, true);
  t[kRcSendLast] = op("SEND_LAST", 0, P::kLast, K::kSend, true);
  t[kRcSendLastImm] = op("SEND_LAST_WITH_IMMEDIATE", kHdrImmDt, P::kLast, K::kSend, true);
  t[kRcSendOnly] = op("SEND_ONLY", 0, P::kOnly, K::kSend, true);
  t[kRcSendOnlyImm] = op("SEND_ONLY_WITH_IMMEDIATE", kHdrImmDt, P::kOnly, K::kSend, true);
  t[kRcWriteFirst] = op("RDMA_WRITE_FIRST", kHdrReth, P::kFirst, K::kWrite, true);
  t[kRcWriteMiddle] = op("RDMA_WRITE_MIDDLE", 0, P::kMiddle, K::kWrite, true);
  t[kRcWriteLast] = op("RDMA_WRITE_LAST", 0, P::kLast, K::kWrite, true);
  t[kRcWriteLastImm] = op("RDMA_WRITE_LAST_WITH_IMMEDIATE", kHdrImmDt, P::kLast, K::kWrite, true);
  t[kRcWriteOnly] = op("RDMA_WRITE_ONLY", kHdrReth, P::kOnly, K::kWrite, true);
  t[kRcWriteOnlyImm] =
      op("RDMA_WRITE_ONLY_WITH_IMMEDIATE", kHdrReth | kHdrImmDt, P::kOnly, K::kWrite, true);
  t[kRcReadRequest] = op("RDMA_READ_REQUEST", kHdrReth, P::kOnly, K::kReadRequest, false);
  t[kRcReadResponseFirst] =
      op("RDMA_READ_RESPONSE_FIRST", kHdrAeth, P::kFirst, K::kReadResponse, true);
  t[kRcReadResponseMiddle] = op("RDMA_READ_RESPONSE_MIDDLE", 0, P::kMiddle, K::kReadResponse, true);
  t[kRcReadResponseLast] = op("RDMA_READ_RESPONSE_LAST", kHdrAeth, P::kLast, K::kReadResponse, true);
  t[kRcReadResponseOnly] = op("RDMA_READ_RESPONSE_ONLY", kHdrAeth, P::kOnly, K::kReadResponse, true);
  t[kRcAck] = op("ACKNOWLEDGE", kHdrAeth, P::kOnly, K::kAck, false);
  t[kRcAtomicAck] = op("ATOMIC_ACKNOWLEDGE", kHdrAeth | kHdrAtomicAckEth, P::kOnly, K::kAtomicAck, false);
  t[kRcCompareSwap] = op("COMPARE_SWAP", kHdrAtomicEth, P::kOnly, K::kAtomic, false);
  t[kRcFetchAdd] = op("FETCH_ADD", kHdrAtomicEth, P::kOnly, K::kAtomic, false);
  t[kRcSendLastInv] = op("SEND_LAST_WITH_INVALIDATE", kHdrIeth, P::kLast, K::kSend, true);
  t[kRcSendOnlyInv] = op("SEND_ONLY_WITH_INVALIDATE", kHdrIeth, P::kOnly, K::kSend, true);
  t[kUdSendOnly] = op("UD_SEND_ONLY", kHdrDeth, P::kOnly, K::kSend, true);
  return t;
}

}  // namespace

namespace detail {
constexpr std::array<OpcodeInfo, 256> kOpcodeTable = build_table();
}  // namespace detail

}  // namespace ndnic::wire
