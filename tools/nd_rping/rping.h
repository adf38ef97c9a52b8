// rdma-core's rping (librdmacm/examples/rping.c) as an ND v1 program: its messages, its
// defaults, its loop, so that `rping` on any verbs stack and nd_rping talk to each other.
//
// One ping: the client fills its start buffer with "rdma-ping-N: " and a rotating run of
// letters, then SENDs {start buffer's address, rkey, size}; the server RDMA READs it and SENDs a
// go-ahead; the client SENDs {sink buffer's address, rkey, size}; the server RDMA WRITEs what it
// read into the sink and SENDs a go-ahead; the client compares start and sink (-V).
// ND v1 has no remote keys on registrations: the buffers go out through memory windows, whose
// token is the rkey and whose base is the buffer's address, as rping's are.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ndnic::nd_rping {

/// rping's advertisement, every field in network byte order (struct rping_rdma_info).
struct RpingInfo {
  uint64_t buf;   ///< the buffer's address at the sender
  uint32_t rkey;  ///< its remote key (here: the window's token)
  uint32_t size;  ///< its length
};
static_assert(sizeof(RpingInfo) == 16, "rping checks byte_len == sizeof(struct rping_rdma_info)");

constexpr uint16_t kDefaultPort = 7174;
constexpr uint32_t kDefaultSize = 64;
/// RPING_MIN_BUFSIZE: sizeof(stringify(INT_MAX)) + sizeof(RPING_MSG_FMT).
constexpr uint32_t kMinSize = sizeof("2147483647") + sizeof("rdma-ping-%d: ");
/// RPING_BUFSIZE - 1.
constexpr uint32_t kMaxSize = 64 * 1024 - 1;
/// rping's QP: 16 sends, 2 receives, one SGE, one READ in flight each way.
constexpr uint32_t kSendDepth = 16;
constexpr uint32_t kRecvDepth = 2;
constexpr uint32_t kReadDepth = 1;

struct Options {
  bool server = false;
  uint32_t peer_ipv4 = 0;      ///< -a: the server's address (client); our own address (server)
  uint16_t port = kDefaultPort;
  uint32_t size = kDefaultSize;
  uint32_t count = 0;          ///< 0: ping until stopped, as rping
  bool verbose = false;
  bool validate = false;
  bool debug = false;
  // What an ndnic port needs that an RDMA device already has.
  uint32_t ipv4 = 0;
  std::string device;
  std::string capture;
  unsigned retry_s = 0;        ///< client: keep trying a refused connect this long
  unsigned timeout_s = 30;     ///< give up on a peer silent this long (rping waits forever)
};

/// Parses the arguments after EAL's "--"; prints usage or the error and returns false when
/// the program should stop with `*exit_code`.
bool parse_options(const std::vector<std::string>& args, Options* o, int* exit_code);

/// The client's start-buffer contents for ping `ping` (rping_test_client's fill).
void fill_ping(char* buf, uint32_t size, int ping, int* start);

}  // namespace ndnic::nd_rping
