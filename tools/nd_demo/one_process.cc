// Both sides in this process over a net_ring pair, stepped one after the other from one thread:
// the narration comes out in the mission's order and each check can look at both sides' memory.
#include <arpa/inet.h>
#include <endian.h>
#include <netinet/in.h>

#include <cstdio>
#include <cstring>

#include "tools/nd_app/address.h"
#include "tools/nd_demo/roles.h"
#include "tools/nd_demo/side.h"

namespace ndnic::nd_demo {
namespace {

using nd_app::status_text;

constexpr uint32_t kOwnerIp = 0xC6120A01;  // 198.18.10.1
constexpr uint32_t kPeerIp = 0xC6120A02;   // 198.18.10.2

/// The owner listens, the peer connects: IB CM over QP1, as between two hosts.
bool connect(Side& owner, Side& peer, INDListen* listen) {
  if (!new_endpoint(owner) || !new_endpoint(peer)) return false;
  OVERLAPPED req{}, con{}, acc{}, done{};
  HRESULT hr = listen->GetConnectionRequest(owner.conn(), &req);
  sockaddr_in to = nd_app::ipv4_sockaddr(kOwnerIp, kPort);
  HRESULT hc = peer.conn()->Connect(peer.ep(), reinterpret_cast<sockaddr*>(&to), sizeof to, 0, 0, nullptr, 0, &con);
  if (owner.finish(listen, &req, hr) != ND_SUCCESS) return false;
  // Accept completes when the RTU arrives, which only the peer's CompleteConnect sends: it is
  // waited for last. Every OVERLAPPED here is finished before this frame goes.
  const HRESULT ha = owner.conn()->Accept(owner.ep(), nullptr, 0, &acc);
  if (FAILED(ha)) return false;
  if (peer.finish(peer.conn(), &con, hc) != ND_SUCCESS) return false;
  hc = peer.finish(peer.conn(), &done, peer.conn()->CompleteConnect(&done));
  const HRESULT accepted = owner.finish(owner.conn(), &acc, ha);
  return check(hc == ND_SUCCESS && accepted == ND_SUCCESS, peer.name,
               "connected to " + ipv4_text(kOwnerIp) + ":" + std::to_string(kPort) +
                   " (IB CM REQ/REP/RTU on QP1): " + status_text(hc));
}

/// The owner SENDs the descriptor; the peer receives it.
bool send_descriptor(Side& owner, Side& peer, const ND_MW_DESCRIPTOR& desc, ND_MW_DESCRIPTOR* got) {
  ND_RESULT rr{};
  if (!post_receive(peer, &rr, 0, sizeof desc)) return false;
  const bool ok = send(owner, &desc, sizeof desc) && peer.wait(&rr) && rr.Status == ND_SUCCESS &&
                  rr.BytesTransferred == sizeof desc;
  std::memcpy(got, peer.buf.data(), sizeof *got);
  return check(ok, owner.name, "sent the window's descriptor to the peer (20 bytes, network order)");
}

}  // namespace

int run_one_process() {
  Side owner{"owner"}, peer{"peer"};
  std::printf("Two ndnic nodes in this process, on a net_ring pair: owner %s, peer %s\n", ipv4_text(kOwnerIp).c_str(),
              ipv4_text(kPeerIp).c_str());
  nd_app::NodeConfig owner_node, peer_node;
  owner_node.ipv4 = kOwnerIp;
  peer_node.ipv4 = kPeerIp;
  if (!nd_app::open_pair("nd_demo", nd_app::worker_lcores(), 1, owner_node, peer_node, &owner.node, &peer.node,
                         "nd_demo: owner", "nd_demo: peer") ||
      !prepare_side(owner) || !prepare_side(peer))
    return 1;
  INDListen* listen = nullptr;
  USHORT assigned = 0;
  if (FAILED(owner.adapter()->Listen(4, 0, htons(kPort), &assigned, &listen))) return 1;
  say(owner.name, "listening on port " + std::to_string(kPort));
  if (!connect(owner, peer, listen)) return 1;

  std::printf("\n1. A window over the owner's memory, its descriptor sent to the peer\n");
  ND_RESULT invalidated{};
  INDMemoryWindow* mw = nullptr;
  if (FAILED(owner.adapter()->CreateMemoryWindow(&invalidated, &mw))) return 1;
  invalidated.Status = ND_PENDING;
  ND_MW_DESCRIPTOR desc{}, at_peer{};
  if (!bind(owner, mw, &desc) || !send_descriptor(owner, peer, desc, &at_peer)) return 1;

  std::printf("\n2. The peer writes and reads through the window\n");
  HRESULT hr = write(peer, at_peer, 0, kFirstFill);
  check(hr == ND_SUCCESS && owner.buf[kWindowOffset] == kFirstFill &&
            owner.buf[kWindowOffset + kPayload - 1] == kFirstFill,
        peer.name, "RDMA WRITE 4 KiB at offset 0: " + status_text(hr) + ", the owner's memory holds it");
  ND_RESULT rd{};
  ND_SGE back = peer.sge(kReadBackOffset, kPayload);
  hr = peer.ep()->Read(&rd, &back, 1, &at_peer, 0, 0);
  const bool read_ok = SUCCEEDED(hr) && peer.wait(&rd) && rd.Status == ND_SUCCESS &&
                       std::memcmp(peer.buf.data() + kReadBackOffset, owner.buf.data() + kWindowOffset, kPayload) == 0;
  check(read_ok, peer.name, "RDMA READ 4 KiB back: " + status_text(rd.Status) + ", same bytes");

  std::printf("\n3. The peer sends with invalidate: the owner sees the invalidation, then the receive\n");
  ND_RESULT rr{}, si{};
  ND_SGE msg = peer.sge(0, sizeof kThanks);
  std::memcpy(peer.buf.data(), kThanks, sizeof kThanks);
  if (!post_receive(owner, &rr, kMessageOffset, 64) || FAILED(peer.ep()->SendAndInvalidate(&si, &msg, 1, &at_peer, 0)))
    return 1;
  const bool sent = peer.wait(&si);
  check(sent && si.Status == ND_SUCCESS, peer.name,
        "SendAndInvalidate(token " + hex(be32toh(at_peer.Token)) + "): " + status_text(si.Status));
  check_invalidate_then_receive(owner, &invalidated, &rr, kStepTimeout);

  std::printf("\n4. The old token is dead: a further WRITE is refused\n");
  hr = write(peer, at_peer, 0, kRefusedFill);
  check(hr == ND_REMOTE_ERROR && owner.buf[kWindowOffset] == kFirstFill, peer.name,
        "RDMA WRITE through the old token: " + status_text(hr) +
            " (the owner answered with a remote access error NAK; nothing written)");
  say("", "RC moves both QPs to the error state after an access error: the peer reconnects.");

  std::printf("\n5. Bound again (a new token), the window works\n");
  if (!connect(owner, peer, listen)) return 1;
  invalidated.Status = ND_PENDING;
  if (!bind(owner, mw, &desc) || !send_descriptor(owner, peer, desc, &at_peer)) return 1;
  hr = write(peer, at_peer, kNewTokenOffset, kNewTokenFill);
  check(hr == ND_SUCCESS && owner.buf[kWindowOffset + kNewTokenOffset] == kNewTokenFill, peer.name,
        "RDMA WRITE through the new token " + hex(be32toh(at_peer.Token)) + ": " + status_text(hr));

  mw->Release();
  listen->Release();
  OVERLAPPED ov{};
  peer.finish(peer.conn(), &ov, peer.conn()->Disconnect(&ov));
  return finish_line();
}

}  // namespace ndnic::nd_demo
