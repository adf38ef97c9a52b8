// One side of the demo (the window's owner or its peer) and the steps both ways of running it
// share: in one process (one_process.cc) and as two processes (passive.cc, active.cc).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "ndnic/ndspi.h"
#include "tools/nd_app/actor.h"
#include "tools/nd_app/arguments.h"
#include "tools/nd_app/connection.h"
#include "tools/nd_app/halt.h"
#include "tools/nd_app/node.h"
#include "tools/nd_app/status.h"
#include "tools/nd_app/waits.h"

namespace ndnic::nd_demo {

using Clock = std::chrono::steady_clock;
using nd_app::ipv4_text;

constexpr uint16_t kPort = 4791 + 1000;       ///< the ND port the owner listens on
constexpr size_t kBuffer = 1 << 20;
constexpr size_t kWindowOffset = 65536;
constexpr size_t kWindowLength = 65536;
constexpr size_t kPayload = 4096;
constexpr size_t kMessageOffset = 8192;       ///< where the owner receives the peer's messages
constexpr size_t kReadBackOffset = 65536;     ///< where the peer reads the window back
constexpr size_t kNewTokenOffset = 100;       ///< where the peer writes through the new token
constexpr uint8_t kFirstFill = 0xAB;          ///< the peer's WRITE through the first token
constexpr uint8_t kRefusedFill = 0xCD;        ///< the WRITE through the dead token
constexpr uint8_t kNewTokenFill = 0xEF;       ///< the WRITE through the new token
constexpr char kThanks[] = "done, thank you";  ///< the SendAndInvalidate's message (16 bytes)
constexpr char kNewTokenWorks[] = "new token works";  ///< two processes: the peer's last message
constexpr auto kStepTimeout = std::chrono::seconds(10);

/// Each failed check counts here; the exit status is 0 only while this is 0.
extern int g_failures;

void say(const char* who, const std::string& what);
bool check(bool ok, const char* who, const std::string& what);
std::string hex(uint64_t v);
/// The last line, from g_failures; the exit status.
int finish_line();

/// One side: its node, CQ, registered buffer, connector and endpoint.
struct Side {
  explicit Side(const char* n) : name(n), actor("nd_demo", n, kStepTimeout.count(), halt, false), link(actor) {}
  ~Side();
  Side(const Side&) = delete;
  Side& operator=(const Side&) = delete;

  const char* name;
  nd_app::Halt halt{false};
  nd_app::Actor actor;  ///< "nd_demo owner: CreateEndpoint: ..." when an endpoint cannot be made
  nd_app::Node node;
  INDCompletionQueue* cq = nullptr;
  nd_app::Connection link;  ///< the connector and its endpoint
  std::vector<uint8_t> buf = std::vector<uint8_t>(kBuffer);
  ND_MR_HANDLE mr = nullptr;

  INDAdapter* adapter() { return node.adapter(); }
  INDConnector* conn() const { return link.connector(); }
  INDEndpoint* ep() const { return link.endpoint(); }
  ND_SGE sge(size_t off, size_t len) { return ND_SGE{buf.data() + off, len, mr}; }
  /// Results reaped from `cq` while waiting for another one, in the CQ's order: a check of the
  /// order results arrive in starts with these (an ACK lost on the port can make our own Send
  /// complete after the peer's next messages arrived).
  std::vector<ND_RESULT*> reaped;

  /// Reaps `cq` until `r` is among the results (kept in `reaped` otherwise), or `timeout`.
  bool wait(const ND_RESULT* r, Clock::duration timeout = kStepTimeout) {
    return nd_app::wait_result(cq, r, &reaped, timeout);
  }
  HRESULT finish(INDOverlapped* o, OVERLAPPED* ov, HRESULT hr, Clock::duration timeout = kStepTimeout) {
    return hr == ND_PENDING ? nd_app::wait_overlapped(o, ov, Clock::now() + timeout) : hr;
  }
  void drop_connection() { link.release(); }
};

/// finish() for a wait that may time out: a call still pending then is canceled (its OVERLAPPED
/// lives in the caller's frame) and ND_TIMEOUT returned.
HRESULT finish_or_cancel(Side& s, INDOverlapped* o, OVERLAPPED* ov, HRESULT hr, Clock::duration timeout);
/// Opens the side's node, its CQ, and registers its buffer (narrated).
bool open_side(Side& s, const nd_app::NodeConfig& nc);
/// The CQ and the registered buffer of a side whose node is open (narrated).
bool prepare_side(Side& s);
/// The endpoint on the side's connector (8 deep each way, 2 SGEs, 2 reads in and out).
bool create_endpoint(Side& s);
/// A fresh connector and endpoint (the old ones released).
bool new_endpoint(Side& s);
/// Binds `mw` over the owner's window, read and write allowed (narrated).
bool bind(Side& owner, INDMemoryWindow* mw, ND_MW_DESCRIPTOR* desc);
/// RDMA WRITE of kPayload bytes of `fill` through `desc` at `off`; the completion's status.
HRESULT write(Side& peer, const ND_MW_DESCRIPTOR& desc, size_t off, uint8_t fill);
/// Posts a receive and returns false (narrated) when ND refused it.
bool post_receive(Side& s, ND_RESULT* r, size_t off, size_t len);
/// Sends `len` bytes from the start of the buffer and waits for the completion.
bool send(Side& s, const void* what, size_t len);
/// The owner's CQ after SendAndInvalidate: the window's invalidate result, then the receive
/// `rr` with kThanks, in that order (both checked and narrated).
void check_invalidate_then_receive(Side& owner, const ND_RESULT* invalidated, const ND_RESULT* rr,
                                   Clock::duration timeout);

}  // namespace ndnic::nd_demo
