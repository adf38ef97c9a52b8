// ndperf's perftest mode from start to end: EAL, the port, the TCP setup, then each test's
// hand shakes, barriers, traffic and reports in the order perftest 4.5-0.17's main() of that
// test has them (send_bw.c, write_bw.c, read_bw.c, send_lat.c, write_lat.c, read_lat.c; one
// QP, no -b, no rdma_cm). "H" below is a hand shake (ctx_hand_shake):
//   send_bw    H, connect, H, H; per size: [server posts receives] H, traffic, row,
//              [-a: H]; close
//   write_bw,  H, connect, H, H; client: every size, rows, then H, report; server: H,
//   read_bw    report (prints the client's row); close
//   send_lat   H, connect, H, H; per size: receives, H, ping-pong, row; close
//   write_lat  H, H, connect, H, H; every size back to back, rows; no close
//   read_lat   H, H, connect, H, H; client: every size, rows; close (the server closes at once)
#include <signal.h>

#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "ndnic/port.h"
#include "tools/ndperf/options.h"
#include "tools/ndperf/perftest/figures.h"
#include "tools/ndperf/perftest/oob.h"
#include "tools/ndperf/perftest/options.h"
#include "tools/ndperf/perftest/run.h"

namespace ndnic::ndperf::perftest {
namespace {

const char* title(TestId t) {
  static const char* const kTitles[3][2] = {{"Send BW Test", "Send Latency Test"},
                                             {"RDMA_Write BW Test", "RDMA_Write Latency Test"},
                                             {"RDMA_Read BW Test", "RDMA_Read Latency Test"}};
  return kTitles[int(t.verb)][t.kind == Kind::kLat];
}

void print_address(const char* side, const Dest& d, TestId t) {
  std::printf(" %s address: LID %#04x QPN %#06x PSN %#06x", side, d.lid, d.qpn, d.psn);
  if (t.verb == Verb::kRead) std::printf(" OUT %#04x", d.out_reads);
  if (t.verb != Verb::kSend) std::printf(" RKey %#08x VAddr %#016" PRIx64, d.rkey, d.vaddr);
  std::printf("\n GID: ");
  for (size_t i = 0; i < d.gid.size(); i++) std::printf("%02d%s", d.gid[i], i + 1 < d.gid.size() ? ":" : "\n");
}

void print_banner(const PerftestOptions& o, const Channel::Agreed& agreed, const Dest& mine, const Dest& peer) {
  std::fputs(kResultLine, stdout);
  std::printf("                    %s (ndperf --perftest, peer %s)\n", title(o.test), peer_program(o.test).c_str());
  std::printf(" Connection type : RC\t\tTransport type : ndnic RoCEv2 (verbs engine)\n");
  std::printf(" TX depth        : %u\n", o.test.kind == Kind::kBw ? std::min<uint32_t>(kDefaultTxDepth, o.iters) : 1);
  std::printf(" Mtu             : %u[B]\n", o.mtu);
  std::printf(" Link type       : Ethernet\n");
  std::printf(" Iterations      : %u per size\n", o.iters);
  std::printf(" Peer's perftest : %.2f (cycle buffer %u, cache line %u)\n", agreed.peer_version, agreed.cycle_buffer,
              agreed.cache_line);
  std::fputs(kResultLine, stdout);
  print_address("local", mine, o.test);
  print_address("remote", peer, o.test);
  std::fputs(kResultLine, stdout);
  std::fputs(o.test.kind == Kind::kBw ? bw_header(o.gbits).c_str() : lat_header().c_str(), stdout);
  std::fflush(stdout);
}

std::vector<uint32_t> sizes(const PerftestOptions& o) {
  if (!o.all) return {o.size};
  std::vector<uint32_t> s;
  for (uint32_t e = 1; e <= kMaxSweepExp; e++) s.push_back(1u << e);
  return s;
}

class Flow {
 public:
  Flow(const PerftestOptions& o, const Channel::Agreed& agreed, Rdma& rdma, Channel& ch)
      : o_(o), agreed_(agreed), rdma_(rdma), ch_(ch) {}

  bool run() {
    const bool lat_extra = o_.test.kind == Kind::kLat && o_.test.verb != Verb::kSend;
    if (!hs("first hand shake")) return false;
    if (lat_extra && !hs("address hand shake")) return false;
    if (!rdma_.connect(peer_, ch_.peer_ipv4())) return false;
    if (!hs("hand shake after connecting") || !hs("hand shake before the traffic")) return false;
    print_banner(o_, agreed_, rdma_.local(), peer_);
    bool ok = false;
    if (o_.test.kind == Kind::kBw)
      ok = o_.test.verb == Verb::kSend ? send_bw() : rdma_bw();
    else if (o_.test.verb == Verb::kSend)
      ok = send_lat();
    else if (o_.test.verb == Verb::kWrite)
      ok = write_lat();
    else
      ok = read_lat();
    std::fputs(kResultLine, stdout);
    std::fflush(stdout);
    return ok;
  }

  const std::string& error() const { return error_.empty() ? ch_.error() : error_; }

 private:
  bool hs(const char* step) { return ch_.hand_shake(rdma_.local(), &peer_, step); }

  void print(const std::string& row) {
    std::fputs(row.c_str(), stdout);
    std::fflush(stdout);
  }

  bool send_bw() {
    for (uint32_t size : sizes(o_)) {
      if (o_.server && !rdma_.post_first_receives(size)) return false;
      if (!hs("barrier before a size")) return false;
      BwSamples s;
      if (!(o_.server ? rdma_.send_bw_receiver(size, &s) : rdma_.bw_requester(size, &s))) return false;
      print(bw_row(bw_figures(s, o_.gbits), o_.gbits));
      if (o_.all && !hs("barrier after a size")) return false;
    }
    return ch_.close_connection(rdma_.local());
  }

  // write_bw, read_bw: only the client moves data; the server waits on the TCP side (its
  // device still answering) and prints what the client reports.
  bool rdma_bw() {
    BwReport mine, theirs;
    if (o_.server) {
      if (!hs("hand shake at the client's end") || !ch_.exchange_report(mine, &theirs)) return false;
      const uint64_t want = sizes(o_).back();
      if (theirs.size != want || theirs.iters != o_.iters) {
        char b[200];
        std::snprintf(b, sizeof b,
                      "perftest client reports %" PRIu64 " iterations of %" PRIu64 " bytes last; we expected %u of %" PRIu64
                      " (same -s/-a and -n on both sides?)",
                      theirs.iters, theirs.size, o_.iters, want);
        error_ = b;
        return false;
      }
      print(bw_row(theirs, o_.gbits));
    } else {
      for (uint32_t size : sizes(o_)) {
        BwSamples s;
        if (!rdma_.bw_requester(size, &s)) return false;
        mine = bw_figures(s, o_.gbits);
        print(bw_row(mine, o_.gbits));
      }
      // perftest's server sends a report it never filled: read, not used.
      if (!hs("hand shake at the end") || !ch_.exchange_report(mine, &theirs)) return false;
    }
    return ch_.close_connection(rdma_.local());
  }

  bool send_lat() {
    for (uint32_t size : sizes(o_)) {
      if (!rdma_.post_first_receives(size) || !hs("barrier before a size")) return false;
      LatSamples s;
      if (!rdma_.send_lat(size, !o_.server, &s)) return false;
      print(lat_row(lat_figures(s, 2)));
    }
    return ch_.close_connection(rdma_.local());
  }

  bool write_lat() {
    for (uint32_t size : sizes(o_)) {
      LatSamples s;
      if (!rdma_.write_lat(size, !o_.server, &s)) return false;
      print(lat_row(lat_figures(s, 2)));
    }
    return true;  // write_lat.c ends without a closing exchange
  }

  bool read_lat() {
    if (!o_.server) {
      for (uint32_t size : sizes(o_)) {
        LatSamples s;
        if (!rdma_.read_lat(size, &s)) return false;
        print(lat_row(lat_figures(s, 1)));
      }
    }
    return ch_.close_connection(rdma_.local());
  }

  const PerftestOptions& o_;
  const Channel::Agreed& agreed_;
  Rdma& rdma_;
  Channel& ch_;
  Dest peer_;
  std::string error_;
};

int run(PerftestOptions o) {
  Rdma rdma(o);
  if (!rdma.open_port()) return 1;
  const Idle idle = [&] { rdma.poll(); };
  Channel ch;
  if (o.server) {
    std::printf("\n************************************\n* Waiting for client to connect... *\n"
                "************************************\n");
    std::fflush(stdout);
  }
  const bool connected = o.server ? ch.accept(o.tcp_port, idle) : ch.connect(o.host, o.tcp_port, o.retry_s, idle);
  Channel::Agreed agreed;
  if (!connected || !ch.setup(o.mtu, &agreed)) {
    std::fprintf(stderr, "ndperf: %s\n", ch.error().c_str());
    return 1;
  }
  o.mtu = agreed.mtu;
  if (!rdma.create(agreed)) return 1;
  Flow flow(o, agreed, rdma, ch);
  const bool ok = flow.run();
  if (!ok && !flow.error().empty()) std::fprintf(stderr, "ndperf: %s\n", flow.error().c_str());
  rdma.linger();
  std::fprintf(stderr, "ndperf: %s: %s\n", ok ? "done" : "FAILED", rdma.counters().c_str());
  return ok ? 0 : 1;
}

}  // namespace

int perftest_main(int argc, char** argv) {
  const ParsedPerftest parsed = parse_perftest_options(program_args(argc, argv));
  if (!parsed.options) return parsed.exit_code;
  signal(SIGPIPE, SIG_IGN);
  // One thread polls the device and talks TCP: one lcore (the interop harness pins it to
  // CPU 0 with -l 0 or --lcores).
  glue::EalDefaults defaults;
  defaults.options = {{"-l", "0"},
                      {"--no-pci", ""},
                      {"--log-level", "lib.eal:warning"},
                      {"--log-level", "lib.vhost.*:warning"},
                      {"--no-telemetry", ""}};
  const glue::EalResult eal = glue::eal_init(argc, argv, defaults);
  if (!eal.ok) {
    std::fprintf(stderr, "ndperf: %s\n", eal.error.c_str());
    return 1;
  }
  const int rc = run(*parsed.options);
  glue::eal_cleanup();
  return rc;
}

}  // namespace ndnic::ndperf::perftest
