// Integration tests of pmd_glue over real PMDs. One program, one mode per PMD setup:
//   ring                  in-process net_ring pair
//   pcap                  net_pcap from a file written with wire::PcapWriter, to a file read back
//   tap --setup CMD       two net_tap ports; CMD (run once both exist) bridges them in the kernel
//   peer --role a|b ...   one side of a two-process test (af_packet over veth, vhost/virtio_user)
// Each sends the RoCEv2 request set one way and ACKs back, checked by decoding on the far side,
// and checks the capture file. Exit status 0 only when everything matched.
//
// Usage: ndnic_glue_test [EAL args] -- MODE [options]
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <rte_arp.h>
#include <rte_cycles.h>
#include <rte_ether.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "ndnic/port.h"
#include "tests/pmd_glue/frames.h"
#include "ndnic/wire/pcap_file.h"

namespace {

using namespace ndnic;
using itest::Endpoints;

constexpr uint32_t kResolveMs = 10000;
constexpr uint32_t kTrafficMs = 10000;

struct Options {
  std::string mode;
  std::map<std::string, std::string> kv;   ///< --name value
  std::string get(const std::string& k, const std::string& dflt = "") const {
    auto it = kv.find(k);
    return it == kv.end() ? dflt : it->second;
  }
};

Options parse(const std::vector<std::string>& args) {
  Options o;
  for (size_t i = 0; i < args.size(); i++) {
    if (args[i].starts_with("--") && i + 1 < args.size())
      o.kv[args[i].substr(2)] = args[i + 1], i++;
    else if (o.mode.empty())
      o.mode = args[i];
  }
  return o;
}

uint32_t ip_of(const std::string& s) {
  uint32_t ip = 0;
  if (!itest::parse_ip(s, &ip)) {
    std::fprintf(stderr, "bad IPv4 address '%s'\n", s.c_str());
    std::exit(2);
  }
  return ip;
}

rte_ether_addr mac_of(uint8_t last) { return {{0x02, 0x00, 0x5e, 0x18, 0x0a, last}}; }

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/ndnic-glue-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

bool open_port(glue::Port& port, glue::PortConfig cfg) {
  if (port.open(cfg)) {
    std::printf("port %u: %s %s ip %s, IPv4 checksum %s\n", port.port_id(), port.driver().c_str(),
                itest::mac_str(port.mac()).c_str(), itest::ip_str(port.ipv4()).c_str(),
                port.tx_ip_checksum_offload() ? "offloaded" : "in software");
    return true;
  }
  std::printf("FAIL: cannot open %s: %s\n", cfg.device.c_str(), port.error().c_str());
  return false;
}

// Resolution both ways with the non-blocking API, polling both ports from one thread.
bool resolve_both(glue::Port& a, glue::Port& b) {
  const uint64_t deadline = rte_rdtsc() + rte_get_tsc_hz() / 1000 * kResolveMs;
  rte_ether_addr mac_b, mac_a;
  glue::Resolve ra = glue::Resolve::kPending, rb = glue::Resolve::kPending;
  while (rte_rdtsc() < deadline) {
    ra = a.resolve(b.ipv4(), &mac_b);
    rb = b.resolve(a.ipv4(), &mac_a);
    if (ra != glue::Resolve::kPending && rb != glue::Resolve::kPending) break;
    rte_mbuf* burst[32];
    for (glue::Port* p : {&a, &b})
      for (uint16_t n = p->rx_burst(burst, 32); n > 0; n--) rte_pktmbuf_free(burst[n - 1]);
    rte_delay_us_sleep(100);
  }
  const bool ok = ra == glue::Resolve::kResolved && rb == glue::Resolve::kResolved &&
                  rte_is_same_ether_addr(&mac_b, &b.mac()) && rte_is_same_ether_addr(&mac_a, &a.mac());
  std::printf("arp: A resolved %s -> %s, B resolved %s -> %s: %s\n", itest::ip_str(b.ipv4()).c_str(),
              ra == glue::Resolve::kResolved ? itest::mac_str(mac_b).c_str() : "(none)",
              itest::ip_str(a.ipv4()).c_str(),
              rb == glue::Resolve::kResolved ? itest::mac_str(mac_a).c_str() : "(none)",
              ok ? "ok" : "FAIL");
  return ok;
}

Endpoints endpoints(const glue::Port& from, const rte_ether_addr& to_mac, uint32_t to_ip) {
  return {from.mac(), to_mac, from.ipv4(), to_ip};
}

std::vector<wire::RocePacket> acks_for(const std::vector<wire::RocePacket>& reqs, const Endpoints& ep) {
  std::vector<wire::RocePacket> acks;
  for (const auto& r : reqs) acks.push_back(itest::ack_for(r, ep));
  return acks;
}

// The capture holds, among its ARP frames, every RoCE frame sent and received, in order.
bool check_capture(const std::string& path, const std::vector<wire::RocePacket>& roce, const char* who) {
  wire::PcapReader reader;
  if (!reader.open(path)) {
    std::printf("%s: capture %s: %s\n", who, path.c_str(), reader.error().c_str());
    return false;
  }
  size_t next = 0, arp = 0, other = 0;
  bool ok = true;
  for (const wire::PcapRecord& rec : reader.records()) {
    if (rec.data.size() >= 14 && rec.data[12] == 0x08 && rec.data[13] == 0x06) {
      arp++;
      continue;
    }
    wire::RocePacket p;
    if (wire::decode_frame(rec.data.data(), rec.data.size(), &p) != wire::Reject::kOk) {
      other++;
      continue;
    }
    if (next >= roce.size() || !itest::check_bytes(rec.data.data(), rec.data.size(), roce[next]).empty())
      ok = false;
    next++;
  }
  ok &= next == roce.size() && arp > 0;
  std::printf("%s: capture %zu records: %zu RoCE frames in order (want %zu), %zu ARP, %zu other: %s\n",
              who, reader.records().size(), next, roce.size(), arp, other, ok ? "ok" : "FAIL");
  return ok;
}

// Requests A -> B, ACKs B -> A, both checked on arrival; then A's capture.
bool exchange_in_process(glue::Port& a, glue::Port& b, const std::string& capture_a) {
  if (!resolve_both(a, b)) return false;
  const auto requests = itest::request_set(endpoints(a, b.mac(), b.ipv4()));
  const auto acks = acks_for(requests, endpoints(b, a.mac(), a.ipv4()));
  bool ok = itest::send_all(a, requests, kTrafficMs) &&
            itest::receive_and_check(b, requests, kTrafficMs, "B <- A", &a);
  ok = ok && itest::send_all(b, acks, kTrafficMs) &&
       itest::receive_and_check(a, acks, kTrafficMs, "A <- B", &b);
  itest::print_counters("A", a);
  itest::print_counters("B", b);
  a.close();  // flushes and closes the capture
  b.close();
  if (!ok) return false;
  std::vector<wire::RocePacket> all = requests;
  all.insert(all.end(), acks.begin(), acks.end());
  return check_capture(capture_a, all, "A");
}

/// Whether `from` knows the ring it sends on (Port::tx_ring, found from its own ethdev's name):
/// a frame it sends waits there until `to` takes it.
bool ring_is_found(glue::Port& from, glue::Port& to, const char* name) {
  const rte_ring* r = from.tx_ring(0);
  rte_mbuf* m = rte_pktmbuf_alloc(from.mempool());
  bool ok = r != nullptr && m != nullptr && r != to.tx_ring(0) && rte_ring_count(r) == 0;
  if (ok) {
    std::memset(rte_pktmbuf_append(m, 60), 0, 60);  // no protocol of ours: the receiver drops it
    ok = from.tx_burst(&m, 1) == 1;
    if (!ok) rte_pktmbuf_free(m);
  } else if (m) {
    rte_pktmbuf_free(m);
  }
  ok = ok && rte_ring_count(r) == 1;
  rte_mbuf* got[4];
  to.rx_burst(got, 4);
  ok = ok && rte_ring_count(r) == 0;
  std::printf("tx_ring: %s finds the ring it sends on: %s\n", name, ok ? "ok" : "FAIL");
  return ok;
}

int run_ring(const Options&) {
  TempDir dir;
  uint16_t pa, pb;
  if (!glue::make_ring_pair("ndring", &pa, &pb)) {
    std::printf("FAIL: cannot create the net_ring pair\n");
    return 1;
  }
  glue::Port a, b;
  glue::PortConfig ca, cb;
  ca.device = std::to_string(pa);
  ca.mac = mac_of(1);
  ca.ipv4 = ip_of("198.18.10.1");
  ca.capture_path = dir.path + "/a.pcap";
  cb.device = std::to_string(pb);
  cb.mac = mac_of(2);
  cb.ipv4 = ip_of("198.18.10.2");
  if (!open_port(a, ca) || !open_port(b, cb)) return 1;
  if (!ring_is_found(a, b, "A") || !ring_is_found(b, a, "B")) return 1;
  return exchange_in_process(a, b, ca.capture_path) ? 0 : 1;
}

int run_tap(const Options& o) {
  TempDir dir;
  glue::Port a, b;
  glue::PortConfig ca, cb;
  ca.device = "net_tap0,iface=" + o.get("iface-a", "ndtapA");
  ca.ipv4 = ip_of("198.18.20.1");
  ca.capture_path = dir.path + "/a.pcap";
  cb.device = "net_tap1,iface=" + o.get("iface-b", "ndtapB");
  cb.ipv4 = ip_of("198.18.20.2");
  if (!open_port(a, ca) || !open_port(b, cb)) return 1;
  const std::string setup = o.get("setup");
  if (!setup.empty() && std::system(setup.c_str()) != 0) {
    std::printf("FAIL: setup command failed: %s\n", setup.c_str());
    return 1;
  }
  bool ok = true;
  const std::string kernel_ip = o.get("kernel-ip");
  if (!kernel_ip.empty()) {  // a kernel host answers our ARP
    rte_ether_addr mac;
    const glue::Resolve r = a.resolve_wait(ip_of(kernel_ip), &mac, kResolveMs);
    ok = r == glue::Resolve::kResolved;
    std::printf("arp: A resolved kernel %s -> %s: %s\n", kernel_ip.c_str(),
                ok ? itest::mac_str(mac).c_str() : "(none)", ok ? "ok" : "FAIL");
  }
  return exchange_in_process(a, b, ca.capture_path) && ok ? 0 : 1;
}

// ---- net_pcap ----

std::vector<uint8_t> frame_bytes(const wire::RocePacket& p) {
  std::vector<uint8_t> f(wire::frame_length(p));
  wire::encode_frame(p, f.data(), f.size());
  return f;
}

std::vector<uint8_t> arp_request(const rte_ether_addr& sha, uint32_t spa, uint32_t tpa) {
  std::vector<uint8_t> f(60, 0);
  std::memset(f.data(), 0xff, 6);
  std::memcpy(f.data() + 6, sha.addr_bytes, 6);
  f[12] = 0x08, f[13] = 0x06;
  const uint8_t hdr[] = {0, 1, 8, 0, 6, 4, 0, 1};
  std::memcpy(f.data() + 14, hdr, sizeof hdr);
  std::memcpy(f.data() + 22, sha.addr_bytes, 6);
  wire::store_be32(f.data() + 28, spa);
  wire::store_be32(f.data() + 38, tpa);
  return f;
}

int run_pcap(const Options&) {
  TempDir dir;
  const std::string in = dir.path + "/in.pcap", out = dir.path + "/out.pcap", cap = dir.path + "/cap.pcap";
  const rte_ether_addr us_mac = mac_of(0x11), peer_mac = mac_of(0x12);
  const uint32_t us_ip = ip_of("198.18.11.1"), peer_ip = ip_of("198.18.11.2");
  const auto requests = itest::request_set({peer_mac, us_mac, peer_ip, us_ip});

  // What the port reads: ARP for us and for another host, frames each drop reason must count,
  // then the requests.
  std::vector<std::vector<uint8_t>> input;
  input.push_back(arp_request(peer_mac, peer_ip, us_ip));
  input.push_back(arp_request(mac_of(0x13), ip_of("198.18.11.5"), ip_of("198.18.11.99")));
  std::vector<uint8_t> ipv6(60, 0);
  std::memcpy(ipv6.data(), us_mac.addr_bytes, 6);
  ipv6[12] = 0x86, ipv6[13] = 0xdd;
  input.push_back(ipv6);
  wire::RocePacket dns = requests[0];
  dns.udp.dst_port = 53;
  input.push_back(frame_bytes(dns));
  wire::RocePacket other_ip = requests[0];
  other_ip.ip4.dst = ip_of("198.18.11.3");
  input.push_back(frame_bytes(other_ip));
  wire::RocePacket other_mac = requests[0];
  other_mac.eth.dst[5] ^= 0xff;
  input.push_back(frame_bytes(other_mac));
  for (const auto& r : requests) input.push_back(frame_bytes(r));
  {
    wire::PcapWriter w;
    if (!w.open(in)) return std::printf("FAIL: cannot write %s\n", in.c_str()), 1;
    for (const auto& f : input) w.write(f.data(), uint32_t(f.size()));
  }

  glue::Port port;
  glue::PortConfig cfg;
  cfg.device = "net_pcap0,rx_pcap=" + in + ",tx_pcap=" + out;
  cfg.mac = us_mac;
  cfg.ipv4 = us_ip;
  cfg.capture_path = cap;
  if (!open_port(port, cfg)) return 1;
  bool ok = itest::receive_and_check(port, requests, kTrafficMs, "port <- pcap");
  rte_ether_addr learned;
  const bool learned_ok = port.resolve(peer_ip, &learned) == glue::Resolve::kResolved &&
                          rte_is_same_ether_addr(&learned, &peer_mac);
  std::printf("arp: learned %s -> %s from its request: %s\n", itest::ip_str(peer_ip).c_str(),
              itest::mac_str(learned).c_str(), learned_ok ? "ok" : "FAIL");
  const auto acks = acks_for(requests, {us_mac, peer_mac, us_ip, peer_ip});
  ok = ok && learned_ok && itest::send_all(port, acks, kTrafficMs);
  const glue::PortCounters c = port.counters();
  itest::print_counters("port", port);
  const bool drops_ok = c[glue::Drop::kArpNotForUs] == 1 && c[glue::Drop::kIpv6] == 1 &&
                        c[glue::Drop::kNotRocePort] == 1 && c[glue::Drop::kNotOurIp] == 1 &&
                        c[glue::Drop::kNotOurMac] == 1 && c.dropped() == 5 && c.rx_arp == 1 &&
                        c.tx_arp_replies == 1 && c.rx_roce == requests.size();
  std::printf("drop counters by reason: %s\n", drops_ok ? "ok" : "FAIL");
  port.close();

  // The tx_pcap file: our ARP reply, then the ACKs.
  wire::PcapReader sent;
  bool out_ok = sent.open(out) && sent.records().size() == 1 + acks.size();
  if (out_ok) {
    const auto& reply = sent.records()[0].data;
    out_ok = reply.size() >= 42 && reply[21] == RTE_ARP_OP_REPLY &&
             std::memcmp(reply.data(), peer_mac.addr_bytes, 6) == 0 &&
             wire::load_be32(reply.data() + 28) == us_ip && wire::load_be32(reply.data() + 38) == peer_ip;
    for (size_t i = 0; i < acks.size(); i++) {
      const auto& d = sent.records()[1 + i].data;
      out_ok &= itest::check_bytes(d.data(), d.size(), acks[i]).empty();
    }
  }
  std::printf("tx_pcap: ARP reply + %zu ACKs decoded: %s\n", acks.size(), out_ok ? "ok" : "FAIL");

  // The capture: every input frame and every output frame, byte for byte.
  wire::PcapReader captured;
  // Compared as sorted byte strings: the order of RX and TX records depends on burst timing.
  auto as_string = [](const std::vector<uint8_t>& v) { return std::string(v.begin(), v.end()); };
  std::vector<std::string> want, got;
  for (const auto& f : input) want.push_back(as_string(f));
  if (out_ok)
    for (const auto& r : sent.records()) want.push_back(as_string(r.data));
  if (captured.open(cap))
    for (const auto& r : captured.records()) got.push_back(as_string(r.data));
  std::sort(want.begin(), want.end());
  std::sort(got.begin(), got.end());
  const bool cap_ok = !got.empty() && got == want;
  std::printf("capture: %zu records, every frame received and sent: %s\n", got.size(), cap_ok ? "ok" : "FAIL");
  return ok && drops_ok && out_ok && cap_ok ? 0 : 1;
}

// ---- one side of a two-process test ----

int run_peer(const Options& o) {
  const std::string role = o.get("role");
  if (role != "a" && role != "b") return std::printf("FAIL: --role a|b\n"), 2;
  const char* me = role == "a" ? "A" : "B";
  TempDir dir;
  glue::Port port;
  glue::PortConfig cfg;
  cfg.device = o.get("device");
  cfg.ipv4 = ip_of(o.get("ip"));
  cfg.capture_path = dir.path + "/cap.pcap";
  cfg.arp_retry_ms = 100;
  cfg.arp_retries = kResolveMs / cfg.arp_retry_ms;  // the peer may still be starting
  if (!open_port(port, cfg)) return 1;
  const uint32_t peer_ip = ip_of(o.get("peer-ip"));

  rte_ether_addr peer_mac;
  const glue::Resolve r = port.resolve_wait(peer_ip, &peer_mac, kResolveMs);
  std::printf("arp: %s resolved %s -> %s: %s\n", me, itest::ip_str(peer_ip).c_str(),
              r == glue::Resolve::kResolved ? itest::mac_str(peer_mac).c_str() : "(none)",
              r == glue::Resolve::kResolved ? "ok" : "FAIL");
  if (r != glue::Resolve::kResolved) return 1;

  const Endpoints a_to_b = role == "a" ? endpoints(port, peer_mac, peer_ip)
                                       : Endpoints{peer_mac, port.mac(), peer_ip, port.ipv4()};
  const Endpoints b_to_a = {a_to_b.dst_mac, a_to_b.src_mac, a_to_b.dst_ip, a_to_b.src_ip};
  const auto requests = itest::request_set(a_to_b);
  const auto acks = acks_for(requests, b_to_a);
  bool ok;
  if (role == "a") {
    ok = itest::send_all(port, requests, kTrafficMs) &&
         itest::receive_and_check(port, acks, kTrafficMs, "A <- B");
  } else {
    ok = itest::receive_and_check(port, requests, kTrafficMs, "B <- A") &&
         itest::send_all(port, acks, kTrafficMs);
    // Linger so A's late ARP retries, if any, are still answered.
    const uint64_t until = rte_rdtsc() + rte_get_tsc_hz() / 2;
    while (rte_rdtsc() < until) {
      rte_mbuf* burst[32];
      for (uint16_t n = port.rx_burst(burst, 32); n > 0; n--) rte_pktmbuf_free(burst[n - 1]);
      rte_delay_us_sleep(100);
    }
  }
  itest::print_counters(me, port);
  port.close();
  if (!ok) return 1;
  std::vector<wire::RocePacket> all = requests;
  all.insert(all.end(), acks.begin(), acks.end());
  return check_capture(cfg.capture_path, all, me) ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  glue::EalDefaults defaults;
  defaults.options = {{"-l", "0"}, {"--no-pci", ""}, {"--log-level", "lib.eal:warning"}, {"--log-level", "lib.vhost.config:warning"}, {"--no-telemetry", ""}};
  glue::EalResult eal = glue::eal_init(argc, argv, defaults);
  if (!eal.ok) {
    std::printf("FAIL: %s\n", eal.error.c_str());
    return 1;
  }
  const Options o = parse(eal.args);
  int rc = 2;
  if (o.mode == "ring") rc = run_ring(o);
  else if (o.mode == "pcap") rc = run_pcap(o);
  else if (o.mode == "tap") rc = run_tap(o);
  else if (o.mode == "peer") rc = run_peer(o);
  else std::printf("usage: %s [EAL args] -- ring | pcap | tap [--setup CMD] | peer --role a|b ...\n", argv[0]);
  std::printf("%s: %s\n", o.mode.c_str(), rc == 0 ? "PASS" : "FAIL");
  glue::eal_cleanup();
  return rc;
}
