// nd_demo: the mission, narrated. Two ndnic nodes in this process over a net_ring pair (no NIC),
// each an ndnic device on a worker lcore, talking RoCEv2 through the ND v1 API only:
//
//   owner: register memory, create a window, bind it, send its descriptor to the peer
//   peer:  RDMA WRITE and RDMA READ through the window, then SendAndInvalidate it
//   owner: the window's invalidate result, then the receive (in that order)
//   peer:  a further WRITE through the old token is refused (access error on the owner's side;
//          RC takes the connection down, as on any RoCE NIC)
//   owner: reconnected, the window is bound again (new token) and the peer's WRITE works
//
// Every step checks its result; the exit status is 0 only when each did what it should.
//
//   nd_demo [EAL args] [-- --capture FILE]
#include <arpa/inet.h>
#include <endian.h>
#include <netinet/in.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "nd_frontend/ndspi.h"
#include "pmd_glue/pmd_glue.h"
#include "tools/nd_node/node.h"

namespace {

using namespace ndnic;
using Clock = std::chrono::steady_clock;
using nd_node::status_text;

constexpr uint32_t kOwnerIp = 0xC6120A01;  // 198.18.10.1
constexpr uint32_t kPeerIp = 0xC6120A02;   // 198.18.10.2
constexpr uint16_t kPort = 4791 + 1000;
constexpr size_t kBuffer = 1 << 20;
constexpr size_t kWindowOffset = 65536;
constexpr size_t kWindowLength = 65536;
constexpr size_t kPayload = 4096;
constexpr auto kStepTimeout = std::chrono::seconds(10);

int g_failures = 0;

void say(const char* who, const std::string& what) { std::printf("  %-6s %s\n", who, what.c_str()); }

bool check(bool ok, const char* who, const std::string& what) {
  std::printf("  %-6s %s %s\n", who, ok ? "ok  " : "FAIL", what.c_str());
  if (!ok) g_failures++;
  std::fflush(stdout);
  return ok;
}

std::string hex(uint64_t v) {
  char b[32];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

/// One side: its node, CQ, registered buffer, connector and endpoint.
struct Side {
  explicit Side(const char* n) : name(n) {}
  const char* name;
  nd_node::Node node;
  INDCompletionQueue* cq = nullptr;
  INDConnector* conn = nullptr;
  INDEndpoint* ep = nullptr;
  std::vector<uint8_t> buf = std::vector<uint8_t>(kBuffer);
  ND_MR_HANDLE mr = nullptr;

  INDAdapter* adapter() { return node.adapter(); }
  ND_SGE sge(size_t off, size_t len) { return ND_SGE{buf.data() + off, len, mr}; }
  bool wait(const ND_RESULT* r) { return nd_node::wait_result(cq, r, Clock::now() + kStepTimeout); }
  HRESULT finish(INDOverlapped* o, OVERLAPPED* ov, HRESULT hr) {
    return hr == ND_PENDING ? nd_node::wait_overlapped(o, ov, Clock::now() + kStepTimeout) : hr;
  }
  void drop_connection() {
    if (ep) ep->Release();
    if (conn) conn->Release();
    ep = nullptr;
    conn = nullptr;
  }
  ~Side() {
    drop_connection();
    if (mr) {
      OVERLAPPED ov{};
      adapter()->DeregisterMemory(mr, &ov);
    }
    if (cq) cq->Release();
  }
};

bool open_side(Side& s, uint16_t port_id, uint32_t ip, unsigned lcore) {
  nd_node::NodeConfig nc;
  nc.device = std::to_string(port_id);
  nc.ipv4 = ip;
  nc.lcore = lcore;
  if (!s.node.open(nc)) {
    std::fprintf(stderr, "nd_demo: %s: %s\n", s.name, s.node.error().c_str());
    return false;
  }
  if (FAILED(s.adapter()->CreateCompletionQueue(64, &s.cq))) return false;
  OVERLAPPED ov{};
  const HRESULT hr = s.finish(s.adapter(), &ov, s.adapter()->RegisterMemory(s.buf.data(), s.buf.size(), &ov, &s.mr));
  return check(hr == ND_SUCCESS, s.name, "registered " + std::to_string(kBuffer >> 10) + " KiB: " + status_text(hr));
}

bool new_endpoint(Side& s) {
  s.drop_connection();
  return SUCCEEDED(s.adapter()->CreateConnector(&s.conn)) &&
         SUCCEEDED(s.conn->CreateEndpoint(s.cq, s.cq, 8, 8, 2, 2, 2, 2, nullptr, &s.ep));
}

/// The owner listens, the peer connects: IB CM over QP1, as between two hosts.
bool connect(Side& owner, Side& peer, INDListen* listen) {
  if (!new_endpoint(owner) || !new_endpoint(peer)) return false;
  OVERLAPPED req{}, con{}, acc{}, done{};
  HRESULT hr = listen->GetConnectionRequest(owner.conn, &req);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(kPort);
  to.sin_addr.s_addr = htonl(kOwnerIp);
  HRESULT hc = peer.conn->Connect(peer.ep, reinterpret_cast<sockaddr*>(&to), sizeof to, 0, 0, nullptr, 0, &con);
  if (owner.finish(listen, &req, hr) != ND_SUCCESS) return false;
  // Accept completes when the RTU arrives, which only the peer's CompleteConnect sends: it is
  // waited for last. Every OVERLAPPED here is finished before this frame goes.
  const HRESULT ha = owner.conn->Accept(owner.ep, nullptr, 0, &acc);
  if (FAILED(ha)) return false;
  if (peer.finish(peer.conn, &con, hc) != ND_SUCCESS) return false;
  hc = peer.finish(peer.conn, &done, peer.conn->CompleteConnect(&done));
  const HRESULT accepted = owner.finish(owner.conn, &acc, ha);
  return check(hc == ND_SUCCESS && accepted == ND_SUCCESS, peer.name,
               "connected to " + std::string("198.18.10.1:") + std::to_string(kPort) +
                   " (IB CM REQ/REP/RTU on QP1): " + status_text(hc));
}

bool bind(Side& owner, INDMemoryWindow* mw, ND_MW_DESCRIPTOR* desc) {
  ND_RESULT r{};
  HRESULT hr = owner.ep->Bind(&r, owner.mr, mw, owner.buf.data() + kWindowOffset, kWindowLength,
                              ND_OP_FLAG_ALLOW_READ | ND_OP_FLAG_ALLOW_WRITE, desc);
  const bool ok = SUCCEEDED(hr) && owner.wait(&r) && r.Status == ND_SUCCESS;
  return check(ok, owner.name,
               "window bound over " + std::to_string(kWindowLength >> 10) + " KiB (read+write): token " +
                   hex(be32toh(desc->Token)) + ", base " + hex(be64toh(desc->Base)));
}

/// The owner SENDs the descriptor; the peer receives it.
bool send_descriptor(Side& owner, Side& peer, const ND_MW_DESCRIPTOR& desc, ND_MW_DESCRIPTOR* got) {
  ND_RESULT rr{}, sr{};
  ND_SGE in = peer.sge(0, sizeof desc);
  std::memcpy(owner.buf.data(), &desc, sizeof desc);
  ND_SGE out = owner.sge(0, sizeof desc);
  if (FAILED(peer.ep->Receive(&rr, &in, 1)) || FAILED(owner.ep->Send(&sr, &out, 1, 0))) return false;
  const bool ok = owner.wait(&sr) && peer.wait(&rr) && sr.Status == ND_SUCCESS && rr.Status == ND_SUCCESS &&
                  rr.BytesTransferred == sizeof desc;
  std::memcpy(got, peer.buf.data(), sizeof *got);
  return check(ok, owner.name, "sent the window's descriptor to the peer (20 bytes, network order)");
}

HRESULT write(Side& peer, const ND_MW_DESCRIPTOR& desc, size_t off, uint8_t fill) {
  std::memset(peer.buf.data() + 4096, fill, kPayload);
  ND_SGE s = peer.sge(4096, kPayload);
  ND_RESULT r{};
  if (FAILED(peer.ep->Write(&r, &s, 1, &desc, off, 0))) return ND_FAILURE;
  return peer.wait(&r) ? r.Status : ND_TIMEOUT;
}

int run(uint16_t pa, uint16_t pb) {
  Side owner{"owner"}, peer{"peer"};
  std::printf("Two ndnic nodes in this process, on a net_ring pair: owner 198.18.10.1, peer 198.18.10.2\n");
  if (!open_side(owner, pa, kOwnerIp, 1) || !open_side(peer, pb, kPeerIp, 2)) return 1;
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
  HRESULT hr = write(peer, at_peer, 0, 0xAB);
  check(hr == ND_SUCCESS && owner.buf[kWindowOffset] == 0xAB && owner.buf[kWindowOffset + kPayload - 1] == 0xAB,
        peer.name, "RDMA WRITE 4 KiB at offset 0: " + status_text(hr) + ", the owner's memory holds it");
  ND_RESULT rd{};
  ND_SGE back = peer.sge(65536, kPayload);
  hr = peer.ep->Read(&rd, &back, 1, &at_peer, 0, 0);
  const bool read_ok = SUCCEEDED(hr) && peer.wait(&rd) && rd.Status == ND_SUCCESS &&
                       std::memcmp(peer.buf.data() + 65536, owner.buf.data() + kWindowOffset, kPayload) == 0;
  check(read_ok, peer.name, "RDMA READ 4 KiB back: " + status_text(rd.Status) + ", same bytes");

  std::printf("\n3. The peer sends with invalidate: the owner sees the invalidation, then the receive\n");
  ND_RESULT rr{}, si{};
  ND_SGE in = owner.sge(8192, 64);
  ND_SGE msg = peer.sge(0, 16);
  std::memcpy(peer.buf.data(), "done, thank you", 16);
  if (FAILED(owner.ep->Receive(&rr, &in, 1)) || FAILED(peer.ep->SendAndInvalidate(&si, &msg, 1, &at_peer, 0)))
    return 1;
  const bool sent = peer.wait(&si);
  check(sent && si.Status == ND_SUCCESS, peer.name,
        "SendAndInvalidate(token " + hex(be32toh(at_peer.Token)) + "): " + status_text(si.Status));
  // The owner's CQ gives the window's result and the receive's, in this order.
  std::vector<ND_RESULT*> order;
  const auto end = Clock::now() + kStepTimeout;
  while (order.size() < 2 && Clock::now() < end) {
    ND_RESULT* r[4];
    const SIZE_T n = owner.cq->GetResults(r, 4);
    order.insert(order.end(), r, r + n);
  }
  check(order.size() == 2 && order[0] == &invalidated && invalidated.Status == ND_SUCCESS, owner.name,
        "result 1: the window's invalidate result, " + status_text(invalidated.Status));
  check(order.size() == 2 && order[1] == &rr && rr.Status == ND_SUCCESS && rr.BytesTransferred == 16, owner.name,
        "result 2: the receive, " + std::to_string(rr.BytesTransferred) + " bytes: \"" +
            reinterpret_cast<const char*>(owner.buf.data() + 8192) + "\"");

  std::printf("\n4. The old token is dead: a further WRITE is refused\n");
  owner.buf[kWindowOffset] = 0;
  hr = write(peer, at_peer, 0, 0xCD);
  check(hr == ND_REMOTE_ERROR && owner.buf[kWindowOffset] == 0, peer.name,
        "RDMA WRITE through the old token: " + status_text(hr) +
            " (the owner answered with a remote access error NAK; nothing written)");
  say("", "RC moves both QPs to the error state after an access error: the peer reconnects.");

  std::printf("\n5. Bound again (a new token), the window works\n");
  if (!connect(owner, peer, listen)) return 1;
  invalidated.Status = ND_PENDING;
  if (!bind(owner, mw, &desc) || !send_descriptor(owner, peer, desc, &at_peer)) return 1;
  hr = write(peer, at_peer, 100, 0xEF);
  check(hr == ND_SUCCESS && owner.buf[kWindowOffset + 100] == 0xEF, peer.name,
        "RDMA WRITE through the new token " + hex(be32toh(at_peer.Token)) + ": " + status_text(hr));

  mw->Release();
  listen->Release();
  OVERLAPPED ov{};
  peer.finish(peer.conn, &ov, peer.conn->Disconnect(&ov));
  std::printf("\n%s\n", g_failures ? "nd_demo: SOME STEPS FAILED" : "nd_demo: every step did what it should");
  return g_failures ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  glue::EalDefaults defaults;
  // The main thread narrates; each node's device polls on a worker lcore of its own.
  defaults.options = {{"--lcores", "0@(0,1),1@1,2@0"}, {"--no-pci", ""}, {"--log-level", "lib.eal:warning"},
                      {"--no-telemetry", ""}};
  const glue::EalResult eal = glue::eal_init(argc, argv, defaults);
  if (!eal.ok) {
    std::fprintf(stderr, "nd_demo: %s\n", eal.error.c_str());
    return 1;
  }
  uint16_t pa = 0, pb = 0;
  int rc = 1;
  if (!glue::make_ring_pair("nd_demo", &pa, &pb))
    std::fprintf(stderr, "nd_demo: creating the net_ring pair failed\n");
  else
    rc = run(pa, pb);
  glue::eal_cleanup();
  return rc;
}
