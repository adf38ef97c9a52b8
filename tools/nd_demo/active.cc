// The window's peer as a process of its own (--role=active): connects to the owner (which may
// still be starting), goes through the window it is sent, SendAndInvalidate-s it, sees a WRITE
// through the dead token refused, reconnects and uses the window's new token. It checks what it
// can see: its completions and what it reads back; the owner checks its own memory.
#include <arpa/inet.h>
#include <endian.h>
#include <netinet/in.h>

#include <cstdio>
#include <cstring>
#include <thread>

#include "tools/nd_app/address.h"
#include "tools/nd_demo/roles.h"
#include "tools/nd_demo/side.h"

namespace ndnic::nd_demo {
namespace {

using nd_app::status_text;

// Between connection attempts while the owner is not listening yet.
constexpr auto kRetryPause = std::chrono::milliseconds(250);

/// Connects to the owner, trying again until `wait` has passed while it is not there yet, and
/// posts `rr` for the window's descriptor before the connection is complete: the owner sends
/// it as soon as its Accept is (on our RTU).
bool connect(Side& peer, uint32_t owner_ip, Clock::duration wait, ND_RESULT* rr) {
  const auto give_up = Clock::now() + wait;
  sockaddr_in to = nd_app::ipv4_sockaddr(owner_ip, kPort);
  const std::string where = ipv4_text(owner_ip) + ":" + std::to_string(kPort);
  unsigned attempts = 0;
  for (;;) {
    if (!new_endpoint(peer)) return check(false, peer.name, "creating a connector and an endpoint failed");
    attempts++;
    OVERLAPPED con{};
    HRESULT hr = peer.conn()->Connect(peer.ep(), reinterpret_cast<sockaddr*>(&to), sizeof to, 0, 0, nullptr, 0, &con);
    hr = finish_or_cancel(peer, peer.conn(), &con, hr, kStepTimeout);
    if (hr == ND_SUCCESS) break;
    // Refused: the owner's node runs but does not listen yet; timeout: no node there yet.
    const bool starting = hr == ND_CONNECTION_REFUSED || hr == ND_TIMEOUT || hr == ND_IO_TIMEOUT ||
                          hr == ND_HOST_UNREACHABLE;
    if (!starting || Clock::now() + kRetryPause > give_up)
      return check(false, peer.name,
                   "connecting to " + where + ": " + status_text(hr) + " (after " + std::to_string(attempts) +
                       " attempts; start the passive side first, or give --wait more seconds)");
    std::this_thread::sleep_for(kRetryPause);
  }
  if (!post_receive(peer, rr, 0, sizeof(ND_MW_DESCRIPTOR))) return false;
  OVERLAPPED done{};
  const HRESULT hr = finish_or_cancel(peer, peer.conn(), &done, peer.conn()->CompleteConnect(&done), kStepTimeout);
  return check(hr == ND_SUCCESS, peer.name,
               "connected to " + where + " (IB CM REQ/REP/RTU on QP1): " + status_text(hr));
}

bool receive_descriptor(Side& peer, ND_RESULT* rr, Clock::duration wait, ND_MW_DESCRIPTOR* desc) {
  const bool ok = peer.wait(rr, wait) && rr->Status == ND_SUCCESS && rr->BytesTransferred == sizeof *desc;
  std::memcpy(desc, peer.buf.data(), sizeof *desc);
  return check(ok, peer.name,
               "received the window's descriptor: token " + hex(be32toh(desc->Token)) + ", base " +
                   hex(be64toh(desc->Base)) + ", " + std::to_string(be64toh(desc->Length) >> 10) + " KiB");
}

}  // namespace

int run_active(const Options& o) {
  Side peer{"peer"};
  const auto wait = std::chrono::seconds(o.wait_s);
  std::printf("The window's peer (active side), ndnic on %s as %s, the owner at %s\n", o.device.c_str(),
              ipv4_text(o.ipv4).c_str(), ipv4_text(o.peer_ipv4).c_str());
  nd_app::NodeConfig nc;
  nc.device = o.device;
  nc.ipv4 = o.ipv4;
  nc.capture = o.capture;
  if (!open_side(peer, nc)) return 1;
  ND_RESULT rr{};
  if (!connect(peer, o.peer_ipv4, wait, &rr)) return finish_line();

  std::printf("\n1. A window over the owner's memory, its descriptor sent to the peer\n");
  ND_MW_DESCRIPTOR desc{};
  if (!receive_descriptor(peer, &rr, kStepTimeout, &desc)) return finish_line();

  std::printf("\n2. The peer writes and reads through the window\n");
  HRESULT hr = write(peer, desc, 0, kFirstFill);
  check(hr == ND_SUCCESS, peer.name, "RDMA WRITE 4 KiB of " + hex(kFirstFill) + " at offset 0: " + status_text(hr));
  ND_RESULT rd{};
  ND_SGE back = peer.sge(kReadBackOffset, kPayload);
  std::memset(peer.buf.data() + kReadBackOffset, 0, kPayload);
  hr = peer.ep()->Read(&rd, &back, 1, &desc, 0, 0);
  const bool read_ok = SUCCEEDED(hr) && peer.wait(&rd) && rd.Status == ND_SUCCESS &&
                       std::memcmp(peer.buf.data() + kReadBackOffset, peer.buf.data() + 4096, kPayload) == 0;
  check(read_ok, peer.name, "RDMA READ 4 KiB back: " + status_text(rd.Status) + ", the bytes written");

  std::printf("\n3. The peer sends with invalidate: the owner sees the invalidation, then the receive\n");
  ND_RESULT si{};
  ND_SGE msg = peer.sge(0, sizeof kThanks);
  std::memcpy(peer.buf.data(), kThanks, sizeof kThanks);
  hr = peer.ep()->SendAndInvalidate(&si, &msg, 1, &desc, 0);
  const bool sent = SUCCEEDED(hr) && peer.wait(&si);
  check(sent && si.Status == ND_SUCCESS, peer.name,
        "SendAndInvalidate(token " + hex(be32toh(desc.Token)) + "): " + status_text(sent ? si.Status : hr));

  std::printf("\n4. The old token is dead: a further WRITE is refused\n");
  hr = write(peer, desc, 0, kRefusedFill);
  check(hr == ND_REMOTE_ERROR, peer.name,
        "RDMA WRITE through the old token: " + status_text(hr) + " (the owner answered with a remote access error NAK)");
  say("", "RC moves both QPs to the error state after an access error: the peer reconnects.");

  std::printf("\n5. Bound again (a new token), the window works\n");
  const uint32_t old_token = desc.Token;
  if (!connect(peer, o.peer_ipv4, kStepTimeout, &rr) || !receive_descriptor(peer, &rr, kStepTimeout, &desc))
    return finish_line();
  check(desc.Token != old_token, peer.name, "the new token differs from the old one");
  hr = write(peer, desc, kNewTokenOffset, kNewTokenFill);
  check(hr == ND_SUCCESS, peer.name,
        "RDMA WRITE through the new token " + hex(be32toh(desc.Token)) + ": " + status_text(hr));
  // The owner checks its window when this note arrives: RC puts it after the WRITE.
  check(send(peer, kNewTokenWorks, sizeof kNewTokenWorks), peer.name, "told the owner (a Send)");
  OVERLAPPED ov{};
  hr = finish_or_cancel(peer, peer.conn(), &ov, peer.conn()->Disconnect(&ov), kStepTimeout);
  say(peer.name, "disconnected: " + status_text(hr));
  return finish_line();
}

}  // namespace ndnic::nd_demo
