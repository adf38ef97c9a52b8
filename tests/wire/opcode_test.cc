// The opcode table against IBTA vol. 1 table 38 and section 9.3's header layouts.
#include <gtest/gtest.h>

#include "ndnic/wire/headers.h"
#include "ndnic/wire/opcode.h"

namespace ndnic::wire {
namespace {

TEST(Opcode, KnownSetIsRcPlusUdSendOnly) {
  int known = 0;
  for (int op = 0; op < 256; op++) {
    if (!opcode_known(uint8_t(op))) continue;
    known++;
    EXPECT_TRUE(op <= 0x17 || op == kUdSendOnly) << op;
  }
  // RC opcodes 0x00..0x17 minus the reserved 0x15, plus UD SEND ONLY.
  EXPECT_EQ(known, 0x18 - 1 + 1);
  EXPECT_FALSE(opcode_known(0x15));
  EXPECT_FALSE(opcode_known(0x18));
  EXPECT_FALSE(opcode_known(0x65));
}

TEST(Opcode, ExtensionHeadersFollowTheSpec) {
  EXPECT_EQ(opcode_info(kRcSendOnly).ext, 0);
  EXPECT_EQ(opcode_info(kRcSendOnlyImm).ext, kHdrImmDt);
  EXPECT_EQ(opcode_info(kRcWriteFirst).ext, kHdrReth);
  EXPECT_EQ(opcode_info(kRcWriteMiddle).ext, 0);
  EXPECT_EQ(opcode_info(kRcWriteOnlyImm).ext, kHdrReth | kHdrImmDt);
  EXPECT_EQ(opcode_info(kRcReadRequest).ext, kHdrReth);
  EXPECT_EQ(opcode_info(kRcReadResponseMiddle).ext, 0);
  EXPECT_EQ(opcode_info(kRcReadResponseLast).ext, kHdrAeth);
  EXPECT_EQ(opcode_info(kRcAtomicAck).ext, kHdrAeth | kHdrAtomicAckEth);
  EXPECT_EQ(opcode_info(kRcCompareSwap).ext_len, kAtomicEthLen);
  EXPECT_EQ(opcode_info(kRcSendLastInv).ext, kHdrIeth);
  EXPECT_EQ(opcode_info(kUdSendOnly).ext_len, kDethLen);
  EXPECT_EQ(opcode_info(kRcAtomicAck).ext_len, kAethLen + kAtomicAckEthLen);
}

TEST(Opcode, PositionAndPayload) {
  for (int op = 0; op < 256; op++) {
    const OpcodeInfo& i = opcode_info(uint8_t(op));
    if (!i.name) continue;
    std::string n = i.name;
    Position want = Position::kOnly;
    if (n.find("_FIRST") != std::string::npos) want = Position::kFirst;
    if (n.find("_MIDDLE") != std::string::npos) want = Position::kMiddle;
    if (n.find("_LAST") != std::string::npos) want = Position::kLast;
    EXPECT_EQ(i.position, want) << n;
    bool no_payload = i.kind == OpKind::kReadRequest || i.kind == OpKind::kAck ||
                      i.kind == OpKind::kAtomic || i.kind == OpKind::kAtomicAck;
    EXPECT_EQ(i.has_payload, !no_payload) << n;
  }
}

}  // namespace
}  // namespace ndnic::wire
