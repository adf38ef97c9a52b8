// The window's owner as a process of its own (--role=passive): listens, binds the window and
// sends its descriptor, then checks from its own memory and CQ what the peer, in another
// process or on another host, did through it. The peer's steps are its own (active.cc); the
// two meet only on the wire, so each side checks what it can see.
#include <arpa/inet.h>
#include <endian.h>
#include <netinet/in.h>

#include <cstdio>
#include <cstring>

#include "tools/nd_demo/roles.h"
#include "tools/nd_demo/side.h"

namespace ndnic::nd_demo {
namespace {

using nd_app::status_text;

/// Takes the next connection request on `listen` (waiting up to `wait` for one) and accepts it.
/// The connection before it stays up until then: releasing it would disconnect (DREQ), and the
/// peer would see its next request flushed instead of the answer it is waiting for.
bool accept(Side& owner, INDListen* listen, Clock::duration wait) {
  INDConnector* next = nullptr;
  if (FAILED(owner.adapter()->CreateConnector(&next))) return check(false, owner.name, "creating a connector failed");
  OVERLAPPED req{}, acc{};
  HRESULT hr = finish_or_cancel(owner, listen, &req, listen->GetConnectionRequest(next, &req), wait);
  owner.link.adopt(next);
  if (hr != ND_SUCCESS)
    return check(false, owner.name, "no connection request from the peer: " + status_text(hr));
  if (!create_endpoint(owner)) return check(false, owner.name, "creating an endpoint failed");
  sockaddr_in from{};
  SIZE_T len = sizeof from;
  const bool named = SUCCEEDED(owner.conn()->GetPeerAddress(reinterpret_cast<sockaddr*>(&from), &len));
  // Accept completes on the peer's RTU.
  hr = finish_or_cancel(owner, owner.conn(), &acc, owner.conn()->Accept(owner.ep(), nullptr, 0, &acc), kStepTimeout);
  return check(hr == ND_SUCCESS, owner.name,
               "accepted the peer " + (named ? ipv4_text(ntohl(from.sin_addr.s_addr)) : std::string("?")) +
                   " (IB CM REQ/REP/RTU on QP1): " + status_text(hr));
}

bool send_descriptor(Side& owner, const ND_MW_DESCRIPTOR& desc) {
  return check(send(owner, &desc, sizeof desc), owner.name,
               "sent the window's descriptor to the peer (" + std::to_string(sizeof desc) + " bytes, network order)");
}

bool window_holds(const Side& owner, size_t off, size_t len, uint8_t fill) {
  for (size_t i = 0; i < len; i++)
    if (owner.buf[kWindowOffset + off + i] != fill) return false;
  return true;
}

}  // namespace

int run_passive(const Options& o) {
  Side owner{"owner"};
  const auto wait = std::chrono::seconds(o.wait_s);
  std::printf("The window's owner (passive side), ndnic on %s as %s\n", o.device.c_str(), ipv4_text(o.ipv4).c_str());
  nd_app::NodeConfig nc;
  nc.device = o.device;
  nc.ipv4 = o.ipv4;
  nc.capture = o.capture;
  if (!open_side(owner, nc)) return 1;
  INDListen* listen = nullptr;
  USHORT assigned = 0;
  HRESULT hr = owner.adapter()->Listen(4, 0, htons(kPort), &assigned, &listen);
  if (!check(SUCCEEDED(hr), owner.name, "listening on port " + std::to_string(kPort) + ": " + status_text(hr)))
    return 1;
  if (!accept(owner, listen, wait)) {
    listen->Release();
    return finish_line();
  }
  ND_RESULT invalidated{};
  INDMemoryWindow* mw = nullptr;
  if (FAILED(owner.adapter()->CreateMemoryWindow(&invalidated, &mw))) {
    listen->Release();
    return 1;
  }
  // Whatever happens next, the window and the listener go before the side does.
  const auto done = [&] {
    mw->Release();
    listen->Release();
    return finish_line();
  };

  std::printf("\n1. A window over the owner's memory, its descriptor sent to the peer\n");
  invalidated.Status = ND_PENDING;
  ND_MW_DESCRIPTOR desc{};
  ND_RESULT rr{};
  // The receive for the peer's SendAndInvalidate is posted before the peer can have the window.
  if (!post_receive(owner, &rr, kMessageOffset, 64) || !bind(owner, mw, &desc) || !send_descriptor(owner, desc))
    return done();

  std::printf("\n2. The peer writes and reads through the window (no work here: RDMA)\n");
  std::printf("\n3. The peer sends with invalidate: the owner sees the invalidation, then the receive\n");
  check_invalidate_then_receive(owner, &invalidated, &rr, wait);
  // RC delivers in order: the WRITE before the Send, so the window has it by now.
  check(window_holds(owner, 0, kPayload, kFirstFill), owner.name,
        "the window holds the peer's RDMA WRITE (4 KiB of " + hex(kFirstFill) + " at offset 0)");

  std::printf("\n4. The old token is dead: the peer's further WRITE is refused\n");
  say("", "a WRITE through an invalidated token gets a remote access error NAK from ndnic here;");
  say("", "RC moves both QPs to the error state after it: the peer reconnects.");
  if (!accept(owner, listen, wait)) return done();
  check(window_holds(owner, 0, kPayload, kFirstFill), owner.name,
        "the refused WRITE left the window as it was (no " + hex(kRefusedFill) + " in it)");

  std::printf("\n5. Bound again (a new token), the window works\n");
  invalidated.Status = ND_PENDING;
  ND_RESULT note{};
  if (!post_receive(owner, &note, kMessageOffset, 64) || !bind(owner, mw, &desc) || !send_descriptor(owner, desc))
    return done();
  const bool got = owner.wait(&note, wait) && note.Status == ND_SUCCESS && note.BytesTransferred == sizeof kNewTokenWorks &&
                   std::memcmp(owner.buf.data() + kMessageOffset, kNewTokenWorks, sizeof kNewTokenWorks) == 0;
  check(got && window_holds(owner, kNewTokenOffset, kPayload, kNewTokenFill), owner.name,
        "the peer's WRITE through the new token " + hex(be32toh(desc.Token)) + " is in the window (" +
            hex(kNewTokenFill) + " at offset " + std::to_string(kNewTokenOffset) + "), and its note came after it");
  OVERLAPPED ov{};
  hr = finish_or_cancel(owner, owner.conn(), &ov, owner.conn()->NotifyDisconnect(&ov), kStepTimeout);
  say(owner.name, "the peer disconnected: " + status_text(hr));
  return done();
}

}  // namespace ndnic::nd_demo
