#include "nd_frontend/status.h"

namespace ndnic::nd {

HRESULT nd_status(const nic::Completion& c) {
  using nic::WcStatus;
  const bool receive = c.opcode == nic::WcOpcode::kRecv || c.opcode == nic::WcOpcode::kRecvWriteImm;
  switch (c.status) {
    case WcStatus::kSuccess:
      return ND_SUCCESS;
    case WcStatus::kLocalLength:  // an incoming Send larger than the receive / SGEs too long
      return receive ? ND_BUFFER_OVERFLOW : ND_LOCAL_LENGTH;
    case WcStatus::kLocalProtection:
    case WcStatus::kMwBind:
      // The ND_RESULT page: an Invalidate of a window that is not valid is an invalidation
      // error; SGEs or a Bind over memory that is not valid, an access violation.
      return c.opcode == nic::WcOpcode::kLocalInv ? ND_INVALIDATION_ERROR : ND_ACCESS_VIOLATION;
    case WcStatus::kLocalQpOperation:
      return ND_INVALID_REQUEST;
    case WcStatus::kWrFlushed:  // canceled by an earlier failure or a Flush
      return ND_CANCELED;
    case WcStatus::kRemoteAccess:
    case WcStatus::kRemoteInvalidRequest:
    case WcStatus::kRemoteOperation:
      return ND_REMOTE_ERROR;
    case WcStatus::kRetryExceeded:
    case WcStatus::kRnrRetryExceeded:  // no receive posted on the peer, retries spent
      return ND_TIMEOUT;
    case WcStatus::kInvalidation:
      return ND_INVALIDATION_ERROR;
    case WcStatus::kBadResponse:
      return ND_FAILURE;
  }
  return ND_FAILURE;
}

}  // namespace ndnic::nd
