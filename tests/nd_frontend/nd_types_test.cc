// ndspi.h against the SDK's definitions (values and layouts listed in nd-v1-facts.md), and the
// engine-to-ND status mapping.
#include <gtest/gtest.h>

#include <cstddef>
#include <set>

#include "ndnic/ndspi.h"
#include "nd_frontend/status.h"

namespace {

TEST(NdStatus, ValuesAreTheSdks) {
  struct V {
    HRESULT code;
    uint32_t value;
  };
  const V table[] = {
      {ND_SUCCESS, 0x00000000}, {ND_TIMEOUT, 0x00000102}, {ND_PENDING, 0x00000103},
      {ND_BUFFER_OVERFLOW, 0x80000005}, {ND_DEVICE_BUSY, 0x80000011}, {ND_NO_MORE_ENTRIES, 0x8000001A},
      {ND_UNSUCCESSFUL, 0xC0000001}, {ND_ACCESS_VIOLATION, 0xC0000005}, {ND_INVALID_HANDLE, 0xC0000008},
      {ND_INVALID_PARAMETER, 0xC000000D}, {ND_INVALID_DEVICE_REQUEST, 0xC0000010}, {ND_NO_MEMORY, 0xC0000017},
      {ND_INVALID_PARAMETER_MIX, 0xC0000030}, {ND_DATA_OVERRUN, 0xC000003C}, {ND_SHARING_VIOLATION, 0xC0000043},
      {ND_INSUFFICIENT_RESOURCES, 0xC000009A}, {ND_DEVICE_NOT_READY, 0xC00000A3}, {ND_IO_TIMEOUT, 0xC00000B5},
      {ND_NOT_SUPPORTED, 0xC00000BB}, {ND_INTERNAL_ERROR, 0xC00000E5}, {ND_INVALID_PARAMETER_1, 0xC00000EF},
      {ND_INVALID_PARAMETER_10, 0xC00000F8}, {ND_CANCELED, 0xC0000120}, {ND_REMOTE_ERROR, 0xC000013D},
      {ND_INVALID_ADDRESS, 0xC0000141}, {ND_INVALID_DEVICE_STATE, 0xC0000184}, {ND_INVALID_BUFFER_SIZE, 0xC0000206},
      {ND_TOO_MANY_ADDRESSES, 0xC0000209}, {ND_ADDRESS_ALREADY_EXISTS, 0xC000020A},
      {ND_CONNECTION_REFUSED, 0xC0000236}, {ND_CONNECTION_INVALID, 0xC000023A}, {ND_CONNECTION_ACTIVE, 0xC000023B},
      {ND_NETWORK_UNREACHABLE, 0xC000023C}, {ND_HOST_UNREACHABLE, 0xC000023D}, {ND_CONNECTION_ABORTED, 0xC0000241},
      {ND_DEVICE_REMOVED, 0xC00002B6}, {ND_LOCAL_LENGTH, 0xC000003C}, {ND_INVALIDATION_ERROR, 0xC0000010},
  };
  for (const V& v : table) EXPECT_EQ(static_cast<uint32_t>(v.code), v.value);
  EXPECT_EQ(ND_INVALID_PARAMETER_5 - ND_INVALID_PARAMETER_1, 4);
}

TEST(NdStatus, SeverityDecidesFailed) {
  static_assert(sizeof(HRESULT) == 4 && HRESULT(-1) < 0);
  EXPECT_FALSE(FAILED(ND_SUCCESS));
  EXPECT_FALSE(FAILED(ND_TIMEOUT));  // STATUS_TIMEOUT has success severity
  EXPECT_FALSE(FAILED(ND_PENDING));
  EXPECT_TRUE(FAILED(ND_BUFFER_OVERFLOW));  // warnings count as failures
  EXPECT_TRUE(FAILED(ND_NO_MORE_ENTRIES));
  EXPECT_TRUE(FAILED(ND_IO_TIMEOUT));
  EXPECT_TRUE(FAILED(ND_FAILURE));
  EXPECT_TRUE(FAILED(ND_INVALID_REQUEST));
}

TEST(NdStatus, OwnCodesCollideWithNothing) {
  const std::set<HRESULT> defined = {
      ND_SUCCESS, ND_TIMEOUT, ND_PENDING, ND_BUFFER_OVERFLOW, ND_DEVICE_BUSY, ND_NO_MORE_ENTRIES,
      ND_UNSUCCESSFUL, ND_ACCESS_VIOLATION, ND_INVALID_HANDLE, ND_INVALID_PARAMETER, ND_INVALID_DEVICE_REQUEST,
      ND_NO_MEMORY, ND_INVALID_PARAMETER_MIX, ND_DATA_OVERRUN, ND_SHARING_VIOLATION, ND_INSUFFICIENT_RESOURCES,
      ND_DEVICE_NOT_READY, ND_IO_TIMEOUT, ND_NOT_SUPPORTED, ND_INTERNAL_ERROR, ND_INVALID_PARAMETER_1,
      ND_INVALID_PARAMETER_2, ND_INVALID_PARAMETER_3, ND_INVALID_PARAMETER_4, ND_INVALID_PARAMETER_5,
      ND_INVALID_PARAMETER_6, ND_INVALID_PARAMETER_7, ND_INVALID_PARAMETER_8, ND_INVALID_PARAMETER_9,
      ND_INVALID_PARAMETER_10, ND_CANCELED, ND_REMOTE_ERROR, ND_INVALID_ADDRESS, ND_INVALID_DEVICE_STATE,
      ND_INVALID_BUFFER_SIZE, ND_TOO_MANY_ADDRESSES, ND_ADDRESS_ALREADY_EXISTS, ND_CONNECTION_REFUSED,
      ND_CONNECTION_INVALID, ND_CONNECTION_ACTIVE, ND_NETWORK_UNREACHABLE, ND_HOST_UNREACHABLE,
      ND_CONNECTION_ABORTED, ND_DEVICE_REMOVED};
  EXPECT_EQ(defined.count(ND_FAILURE), 0u);
  EXPECT_EQ(defined.count(ND_INVALID_REQUEST), 0u);
  EXPECT_NE(ND_FAILURE, ND_INVALID_REQUEST);
}

TEST(NdTypes, LayoutsAreTheSdks) {
  EXPECT_EQ(offsetof(ND_SGE, Length), 8u);
  EXPECT_EQ(offsetof(ND_SGE, hMr), 16u);
  EXPECT_EQ(offsetof(ND_MW_DESCRIPTOR, Length), 8u);
  EXPECT_EQ(offsetof(ND_MW_DESCRIPTOR, Token), 16u);
  EXPECT_EQ(offsetof(ND_ADAPTER_INFO1, MaxInboundSge), 8u);
  EXPECT_EQ(offsetof(ND_ADAPTER_INFO1, MaxCalleeData), 120u);
  EXPECT_EQ(offsetof(ND_RESULT, BytesTransferred), 8u);
  EXPECT_EQ(ND_OP_FLAG_SILENT_SUCCESS | ND_OP_FLAG_READ_FENCE | ND_OP_FLAG_SEND_AND_SOLICIT_EVENT |
                ND_OP_FLAG_ALLOW_READ | ND_OP_FLAG_ALLOW_WRITE,
            0x1Fu);
  EXPECT_EQ(ND_CQ_NOTIFY_SOLICITED, 2u);
  EXPECT_FALSE(IID_INDMemoryWindow == IID_INDEndpoint);
}

}  // namespace

// Every engine completion status has the ND v1 status the ND_RESULT page gives it; the ones no
// ND-level scenario can produce on a healthy peer (a malformed response, a local QP operation
// error) are checked here.
TEST(NdStatus, EveryCompletionStatusMapsAsTheResultPageSays) {
  using ndnic::nic::WcOpcode;
  using ndnic::nic::WcStatus;
  auto map = [](WcStatus s, WcOpcode op) {
    ndnic::nic::Completion c{};
    c.status = s;
    c.opcode = op;
    return ndnic::nd::nd_status(c);
  };
  EXPECT_EQ(map(WcStatus::kSuccess, WcOpcode::kSend), ND_SUCCESS);
  EXPECT_EQ(map(WcStatus::kLocalLength, WcOpcode::kSend), ND_LOCAL_LENGTH);
  EXPECT_EQ(map(WcStatus::kLocalLength, WcOpcode::kRecv), ND_BUFFER_OVERFLOW);
  EXPECT_EQ(map(WcStatus::kLocalLength, WcOpcode::kRecvWriteImm), ND_BUFFER_OVERFLOW);
  EXPECT_EQ(map(WcStatus::kLocalProtection, WcOpcode::kSend), ND_ACCESS_VIOLATION);
  EXPECT_EQ(map(WcStatus::kLocalProtection, WcOpcode::kBindMw), ND_ACCESS_VIOLATION);
  EXPECT_EQ(map(WcStatus::kLocalProtection, WcOpcode::kLocalInv), ND_INVALIDATION_ERROR);
  EXPECT_EQ(map(WcStatus::kMwBind, WcOpcode::kBindMw), ND_ACCESS_VIOLATION);
  EXPECT_EQ(map(WcStatus::kLocalQpOperation, WcOpcode::kSend), ND_INVALID_REQUEST);
  EXPECT_EQ(map(WcStatus::kWrFlushed, WcOpcode::kRecv), ND_CANCELED);
  EXPECT_EQ(map(WcStatus::kRemoteAccess, WcOpcode::kWrite), ND_REMOTE_ERROR);
  EXPECT_EQ(map(WcStatus::kRemoteInvalidRequest, WcOpcode::kSend), ND_REMOTE_ERROR);
  EXPECT_EQ(map(WcStatus::kRemoteOperation, WcOpcode::kSend), ND_REMOTE_ERROR);
  EXPECT_EQ(map(WcStatus::kRetryExceeded, WcOpcode::kRead), ND_TIMEOUT);
  EXPECT_EQ(map(WcStatus::kRnrRetryExceeded, WcOpcode::kSend), ND_TIMEOUT);
  EXPECT_EQ(map(WcStatus::kInvalidation, WcOpcode::kRecv), ND_INVALIDATION_ERROR);
  EXPECT_EQ(map(WcStatus::kBadResponse, WcOpcode::kRead), ND_FAILURE);
}
