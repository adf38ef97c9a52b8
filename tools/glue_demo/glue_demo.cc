// glue_demo: two ndnic ports exchanging RoCEv2 frames, printed decoded as they arrive. The demo of
// the codec (wire/) and the DPDK glue (pmd_glue/) until the transport exists.
//
//   glue_demo [EAL args] -- [--ring] [--capture FILE]
//
// As root, the two ports are net_af_packet on the two ends of a veth pair, in a network
// namespace private to this process (it vanishes with it), so ARP crosses a real kernel link.
// Otherwise, or with --ring, they are a net_ring pair in memory.
#include <sched.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include <rte_cycles.h>
#include <rte_mbuf.h>

#include "ndnic/port.h"
#include "ndnic/wire/packet.h"

namespace {

using namespace ndnic;

constexpr const char* kVethA = "glue_demoA";
constexpr const char* kVethB = "glue_demoB";
constexpr uint32_t kIpA = 0xC6121E01;       // 198.18.30.1
constexpr uint32_t kIpB = 0xC6121E02;       // 198.18.30.2
constexpr uint32_t kQpA = 0x000022, kQpB = 0x000011;
constexpr uint32_t kWaitMs = 5000;

std::string mac_str(const rte_ether_addr& m) {
  char b[RTE_ETHER_ADDR_FMT_SIZE];
  rte_ether_format_addr(b, sizeof b, &m);
  return b;
}

std::string ip_str(uint32_t ip) {
  char b[16];
  std::snprintf(b, sizeof b, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255);
  return b;
}

// One port and what it needs to address its peer.
struct End {
  explicit End(const char* n) : name(n) {}
  const char* name;
  glue::Port port;
  rte_ether_addr peer_mac{};
  uint32_t peer_ip = 0;
  uint32_t peer_qp = 0;
  uint32_t psn = 1;
};

// The veth pair lives in a namespace nobody else sees, created before EAL starts its threads.
bool enter_private_netns() {
  if (unshare(CLONE_NEWNET) != 0) {
    std::perror("glue_demo: unshare(CLONE_NEWNET)");
    return false;
  }
  const std::string cmd =
      std::string("sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 && ") +
      "ip link set lo up && ip link add " + kVethA + " type veth peer name " + kVethB +
      " && ip link set " + kVethA + " up && ip link set " + kVethB + " up";
  return std::system(cmd.c_str()) == 0;
}

bool open_end(End& e, const std::string& device, uint32_t ip, const std::string& capture) {
  glue::PortConfig cfg;
  cfg.device = device;
  cfg.ipv4 = ip;
  cfg.capture_path = capture;
  if (!e.port.open(cfg)) {
    std::fprintf(stderr, "glue_demo: %s: %s\n", e.name, e.port.error().c_str());
    return false;
  }
  std::printf("%s: %-14s %s  %s  IPv4 checksum %s\n", e.name, e.port.driver().c_str(),
              mac_str(e.port.mac()).c_str(), ip_str(ip).c_str(),
              e.port.tx_ip_checksum_offload() ? "offloaded" : "in software");
  return true;
}

// Both ends resolve each other with the non-blocking API, polled from this one thread.
bool resolve(End& a, End& b) {
  const uint64_t deadline = rte_rdtsc() + rte_get_tsc_hz() / 1000 * kWaitMs;
  bool done_a = false, done_b = false;
  while (!(done_a && done_b) && rte_rdtsc() < deadline) {
    for (End* e : {&a, &b}) {
      bool& done = e == &a ? done_a : done_b;
      if (!done && e->port.resolve(e->peer_ip, &e->peer_mac) == glue::Resolve::kResolved) {
        done = true;
        std::printf("%s: arp %s is-at %s\n", e->name, ip_str(e->peer_ip).c_str(),
                    mac_str(e->peer_mac).c_str());
      }
      rte_mbuf* burst[8];
      for (uint16_t n = e->port.rx_burst(burst, 8); n > 0; n--) rte_pktmbuf_free(burst[n - 1]);
    }
  }
  return done_a && done_b;
}

// Fills the addressing of a frame from `from` to its peer; the caller sets the rest.
wire::RocePacket frame(End& from, uint8_t opcode) {
  wire::RocePacket p;
  std::memcpy(p.eth.src, from.port.mac().addr_bytes, 6);
  std::memcpy(p.eth.dst, from.peer_mac.addr_bytes, 6);
  p.ip4.src = from.port.ipv4();
  p.ip4.dst = from.peer_ip;
  p.udp.src_port = 0xC000 | uint16_t(from.peer_qp);
  p.bth.opcode = opcode;
  p.bth.dest_qp = from.peer_qp;
  p.bth.psn = from.psn++;
  return p;
}

bool send(End& from, const wire::RocePacket& p) {
  rte_mbuf* m = rte_pktmbuf_alloc(from.port.mempool());
  if (m == nullptr) return false;
  const uint16_t len = uint16_t(wire::frame_length(p));
  auto* data = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, len));
  if (data == nullptr || wire::encode_frame(p, data, len) != len || from.port.tx_burst(&m, 1) != 1) {
    rte_pktmbuf_free(m);
    return false;
  }
  return true;
}

// One line per frame: opcode, BTH fields, extension headers, payload length, ICRC verdict.
void print_decoded(const char* to, const char* from, const uint8_t* data, size_t len) {
  wire::RocePacket p;
  wire::Reject r = wire::decode_frame(data, len, &p);
  const char* icrc = "ok";
  if (r == wire::Reject::kIcrcMismatch) {
    icrc = "BAD";
    r = wire::decode_frame(data, len, &p, {.check_icrc = false});
  }
  if (r != wire::Reject::kOk) {
    std::printf("%s <- %s  undecodable: %s\n", to, from, wire::reject_name(r));
    return;
  }
  const uint8_t ext = wire::opcode_info(p.bth.opcode).ext;
  std::printf("%s <- %s  %-26s dqp=0x%06x psn=0x%06x%s", to, from, wire::opcode_info(p.bth.opcode).name,
              p.bth.dest_qp, p.bth.psn, p.bth.ack_req ? " ackreq" : "");
  if (ext & wire::kHdrReth)
    std::printf(" va=0x%" PRIx64 " rkey=0x%x dmalen=%u", p.reth.va, p.reth.rkey, p.reth.dma_len);
  if (ext & wire::kHdrAtomicEth)
    std::printf(" va=0x%" PRIx64 " rkey=0x%x add/swap=%" PRIu64, p.atomic.va, p.atomic.rkey, p.atomic.swap_add);
  if (ext & wire::kHdrAeth) std::printf(" syndrome=0x%02x msn=%u", p.aeth.syndrome, p.aeth.msn);
  if (ext & wire::kHdrAtomicAckEth) std::printf(" orig=%" PRIu64, p.atomic_ack.orig);
  if (ext & wire::kHdrImmDt) std::printf(" imm=0x%08x", p.imm);
  std::printf(" len=%u icrc=%s\n", p.payload_len, icrc);
}

// Waits for the next RoCE frame on `to` (polling `from` too, so it answers ARP) and prints it.
bool receive(End& to, End& from) {
  const uint64_t deadline = rte_rdtsc() + rte_get_tsc_hz() / 1000 * kWaitMs;
  while (rte_rdtsc() < deadline) {
    rte_mbuf* m;
    rte_mbuf* other[8];
    for (uint16_t n = from.port.rx_burst(other, 8); n > 0; n--) rte_pktmbuf_free(other[n - 1]);
    if (to.port.rx_burst(&m, 1) == 1) {
      print_decoded(to.name, from.name, rte_pktmbuf_mtod(m, const uint8_t*), m->data_len);
      rte_pktmbuf_free(m);
      return true;
    }
  }
  std::printf("%s: nothing from %s within %u ms\n", to.name, from.name, kWaitMs);
  return false;
}

bool exchange(End& from, End& to, const wire::RocePacket& p) { return send(from, p) && receive(to, from); }

}  // namespace

int main(int argc, char** argv) {
  bool ring = geteuid() != 0;
  std::string capture;
  for (int i = 1; i < argc; i++) {
    if (std::string_view(argv[i]) == "--ring") ring = true;
    if (std::string_view(argv[i]) == "--capture" && i + 1 < argc) capture = argv[i + 1];
  }
  if (!ring && !enter_private_netns()) return 1;

  glue::EalDefaults defaults;
  defaults.options = {{"-l", "0"}, {"--no-pci", ""}, {"--log-level", "lib.eal:warning"}, {"--no-telemetry", ""}};
  const glue::EalResult eal = glue::eal_init(argc, argv, defaults);
  if (!eal.ok) {
    std::fprintf(stderr, "glue_demo: %s\n", eal.error.c_str());
    return 1;
  }

  End a("A"), b("B");
  bool ok;
  if (ring) {
    uint16_t pa, pb;
    ok = glue::make_ring_pair("glue_demo", &pa, &pb) && open_end(a, std::to_string(pa), kIpA, capture) &&
         open_end(b, std::to_string(pb), kIpB, "");
  } else {
    ok = open_end(a, std::string("net_af_packet0,iface=") + kVethA, kIpA, capture) &&
         open_end(b, std::string("net_af_packet1,iface=") + kVethB, kIpB, "");
  }
  a.peer_ip = kIpB, a.peer_qp = kQpB;
  b.peer_ip = kIpA, b.peer_qp = kQpA;
  ok = ok && resolve(a, b);

  // A conversation as an RC requester (A) and responder (B) would have it.
  uint8_t payload[1024];
  for (size_t i = 0; i < sizeof payload; i++) payload[i] = uint8_t(i);
  if (ok) {
    wire::RocePacket send_only = frame(a, wire::kRcSendOnly);
    send_only.bth.ack_req = true;
    send_only.payload = payload, send_only.payload_len = 64;
    ok = ok && exchange(a, b, send_only);
    wire::RocePacket ack = frame(b, wire::kRcAck);
    ack.bth.psn = send_only.bth.psn, ack.aeth = {0x1F, 1};
    ok = ok && exchange(b, a, ack);

    wire::RocePacket write = frame(a, wire::kRcWriteOnly);
    write.bth.ack_req = true;
    write.reth = {0x7f0000001000, 0x1234, 1000};
    write.payload = payload, write.payload_len = 1000;
    ok = ok && exchange(a, b, write);

    wire::RocePacket read = frame(a, wire::kRcReadRequest);
    read.reth = {0x7f0000001000, 0x1234, 256};
    ok = ok && exchange(a, b, read);
    wire::RocePacket response = frame(b, wire::kRcReadResponseOnly);
    response.bth.psn = read.bth.psn, response.aeth = {0x1F, 3};
    response.payload = payload, response.payload_len = 256;
    ok = ok && exchange(b, a, response);

    wire::RocePacket fadd = frame(a, wire::kRcFetchAdd);
    fadd.atomic = {0x7f0000002000, 0x1234, 5, 0};
    ok = ok && exchange(a, b, fadd);
    wire::RocePacket atomic_ack = frame(b, wire::kRcAtomicAck);
    atomic_ack.bth.psn = fadd.bth.psn, atomic_ack.aeth = {0x1F, 4}, atomic_ack.atomic_ack = {37};
    ok = ok && exchange(b, a, atomic_ack);

    wire::RocePacket imm = frame(a, wire::kRcSendOnlyImm);
    imm.bth.ack_req = true, imm.imm = 0xC0FFEE;
    imm.payload = payload, imm.payload_len = 13;
    ok = ok && exchange(a, b, imm);
  }

  for (End* e : {&a, &b}) {
    const glue::PortCounters c = e->port.counters();
    std::printf("%s: rx %" PRIu64 " (roce %" PRIu64 ", arp %" PRIu64 ", dropped %" PRIu64 ") tx %" PRIu64 "\n",
                e->name, c.rx_frames, c.rx_roce, c.rx_arp, c.dropped(), c.tx_frames);
    e->port.close();
  }
  if (!capture.empty()) std::printf("A's frames are in %s\n", capture.c_str());
  std::printf("glue_demo: %s\n", ok ? "ok" : "FAILED");
  glue::eal_cleanup();
  return ok ? 0 : 1;
}
