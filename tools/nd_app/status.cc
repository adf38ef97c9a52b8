#include "tools/nd_app/status.h"

#include <cstdio>

#include "ndnic/ndnic_ext.h"

namespace ndnic::nd_app {

std::string status_text(HRESULT hr) {
  struct Name {
    HRESULT hr;
    const char* name;
  };
  static constexpr Name kNames[] = {
      {ND_SUCCESS, "ND_SUCCESS"},
      {ND_TIMEOUT, "ND_TIMEOUT"},
      {ND_PENDING, "ND_PENDING"},
      {ND_BUFFER_OVERFLOW, "ND_BUFFER_OVERFLOW"},
      {ND_NO_MORE_ENTRIES, "ND_NO_MORE_ENTRIES"},
      {ND_UNSUCCESSFUL, "ND_UNSUCCESSFUL"},
      {ND_ACCESS_VIOLATION, "ND_ACCESS_VIOLATION"},
      {ND_INVALID_PARAMETER, "ND_INVALID_PARAMETER"},
      {ND_INVALID_DEVICE_REQUEST, "ND_INVALIDATION_ERROR"},
      {ND_DATA_OVERRUN, "ND_LOCAL_LENGTH"},
      {ND_INSUFFICIENT_RESOURCES, "ND_INSUFFICIENT_RESOURCES"},
      {ND_IO_TIMEOUT, "ND_IO_TIMEOUT"},
      {ND_INVALID_BUFFER_SIZE, "ND_INVALID_BUFFER_SIZE"},
      {ND_NOT_SUPPORTED, "ND_NOT_SUPPORTED"},
      {ND_CANCELED, "ND_CANCELED"},
      {ND_REMOTE_ERROR, "ND_REMOTE_ERROR"},
      {ND_INVALID_ADDRESS, "ND_INVALID_ADDRESS"},
      {nd::STATUS_BAD_NETWORK_NAME, "STATUS_BAD_NETWORK_NAME"},
      {ND_ADDRESS_ALREADY_EXISTS, "ND_ADDRESS_ALREADY_EXISTS"},
      {ND_CONNECTION_REFUSED, "ND_CONNECTION_REFUSED"},
      {ND_CONNECTION_INVALID, "ND_CONNECTION_INVALID"},
      {ND_CONNECTION_ACTIVE, "ND_CONNECTION_ACTIVE"},
      {ND_CONNECTION_ABORTED, "ND_CONNECTION_ABORTED"},
      {ND_HOST_UNREACHABLE, "ND_HOST_UNREACHABLE"},
      {ND_FAILURE, "ND_FAILURE"},
      {ND_INVALID_REQUEST, "ND_INVALID_REQUEST"},
  };
  char hex[16];
  std::snprintf(hex, sizeof hex, "0x%08X", uint32_t(hr));
  std::string s;
  for (const Name& n : kNames)
    if (n.hr == hr) s.append(n.name).append(" (");
  s.append(hex);
  if (s.size() > 10) s.append(")");
  return s;
}


}  // namespace ndnic::nd_app
