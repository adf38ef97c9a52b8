#include "tools/ndperf/perftest/options.h"

#include <getopt.h>

#include <cstdio>
#include <string_view>

#include "tools/nd_app/arguments.h"
#include "tools/ndperf/perftest/oob.h"

namespace ndnic::ndperf::perftest {
namespace {

constexpr const char* kUsage =
    "Usage:\n"
    "  ndperf [EAL args --] --perftest TEST --server --dev=DEV --ip=A.B.C.D [options]\n"
    "  ndperf [EAL args --] --perftest TEST --client=HOST --dev=DEV --ip=A.B.C.D [options]\n"
    "\n"
    "Runs one perftest test against perftest itself (ib_send_bw, ib_write_lat, ... of\n"
    "perftest 4.5-0.17, without -R) on another host: its TCP exchange on port 18515, its\n"
    "hand shakes and barriers, its message flow and buffers, its result table. ndnic is the\n"
    "RDMA device, an engine on a DPDK port polled by this thread. Both sides must run the same\n"
    "test with the same -s/-a and -n.\n"
    "\n"
    "  --perftest=TEST          send_bw, write_bw, read_bw, send_lat, write_lat, read_lat\n"
    "  -s, --size=BYTES         message size, 1 B .. 8M (K, M suffixes); default 65536 for\n"
    "                           bandwidth tests, 2 for latency tests\n"
    "  -a, --all                every size 2 B .. 8 MiB (powers of two), as perftest's -a\n"
    "  -n, --iters=N            iterations per size, 5 .. 100000000 (default 5000 for\n"
    "                           bandwidth tests, 1000 for latency tests)\n"
    "  -m, --mtu=BYTES          path MTU offered: 256, 512, 1024 (default), 2048, 4096; the\n"
    "                           smaller of both sides' is used, as perftest does\n"
    "      --report_gbits       bandwidth in Gb/sec instead of MB/sec\n"
    "      --server             wait for the perftest client\n"
    "      --client=HOST        connect to the perftest server at HOST\n"
    "  -p, --tcp-port=PORT      the TCP port (default 18515)\n"
    "      --dev=DEVARGS        the DPDK port: an ethdev port or a vdev (net_af_packet0,iface=eth1)\n"
    "      --ip=A.B.C.D         our IPv4 address on it (ndnic answers ARP for it; our GID is\n"
    "                           ::ffff:A.B.C.D: run perftest with -x on its RoCE v2 IPv4 GID)\n"
    "      --retry=S            client: keep trying for S seconds while nobody listens\n"
    "      --timeout=S          fail when no completion comes for S seconds (default 30)\n"
    "      --capture=FILE       write every frame sent and received to a pcap file\n"
    "  -h, --help               this text\n";

enum LongOnly { kPerftest = 256, kGbits, kServer, kClient, kDev, kIp, kRetry, kTimeout, kCapture };

ParsedPerftest usage_error(const std::string& what) {
  std::fprintf(stderr, "ndperf: %s\nTry 'ndperf --perftest=send_bw --help' for more information.\n", what.c_str());
  return ParsedPerftest{std::nullopt, 2};
}

}  // namespace

std::optional<TestId> test_by_name(const std::string& name) {
  static const std::pair<const char*, TestId> kTests[] = {
      {"send_bw", {Verb::kSend, Kind::kBw}},   {"write_bw", {Verb::kWrite, Kind::kBw}},
      {"read_bw", {Verb::kRead, Kind::kBw}},   {"send_lat", {Verb::kSend, Kind::kLat}},
      {"write_lat", {Verb::kWrite, Kind::kLat}}, {"read_lat", {Verb::kRead, Kind::kLat}}};
  for (const auto& [n, t] : kTests)
    if (name == n) return t;
  return std::nullopt;
}

std::string test_name(TestId t) {
  std::string s = t.verb == Verb::kSend ? "send" : t.verb == Verb::kWrite ? "write" : "read";
  s.append(t.kind == Kind::kBw ? "_bw" : "_lat");
  return s;
}

std::string peer_program(TestId t) {
  std::string s("ib_");
  s.append(test_name(t));
  return s;
}

bool requested(const std::vector<std::string>& args) {
  for (const std::string& a : args)
    if (a == "--perftest" || a.rfind("--perftest=", 0) == 0) return true;
  return false;
}

ParsedPerftest parse_perftest_options(const std::vector<std::string>& args) {
  std::vector<char*> argv{const_cast<char*>("ndperf")};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  static const option kLong[] = {
      {"perftest", required_argument, nullptr, kPerftest}, {"size", required_argument, nullptr, 's'},
      {"all", no_argument, nullptr, 'a'},                  {"iters", required_argument, nullptr, 'n'},
      {"mtu", required_argument, nullptr, 'm'},            {"report_gbits", no_argument, nullptr, kGbits},
      {"server", no_argument, nullptr, kServer},           {"client", required_argument, nullptr, kClient},
      {"tcp-port", required_argument, nullptr, 'p'},       {"port", required_argument, nullptr, 'p'},
      {"dev", required_argument, nullptr, kDev},           {"ip", required_argument, nullptr, kIp},
      {"retry", required_argument, nullptr, kRetry},       {"timeout", required_argument, nullptr, kTimeout},
      {"capture", required_argument, nullptr, kCapture},   {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0}};
  PerftestOptions o;
  bool have_test = false, have_ip = false, have_size = false;
  opterr = 0;
  optind = 0;
  const int argc = int(argv.size()) - 1;
  std::string bad;
  for (int c; bad.empty() && (c = getopt_long(argc, argv.data(), ":s:an:m:p:h", kLong, nullptr)) != -1;) {
    unsigned long v = 0;
    switch (c) {
      case 'h':
        std::fputs(kUsage, stdout);
        nd_app::forget_getopt_state();
        return ParsedPerftest{std::nullopt, 0};
      case kPerftest:
        if (const std::optional<TestId> t = test_by_name(optarg)) {
          o.test = *t;
          have_test = true;
        } else {
          bad = "unknown perftest test '";
          bad.append(optarg).append("' (send_bw, write_bw, read_bw, send_lat, write_lat, read_lat)");
        }
        break;
      case 's':
        if (nd_app::parse_size(optarg, kMaxSize, &v)) {
          o.size = uint32_t(v);
          have_size = true;
        } else {
          bad = "bad -s '";
          bad.append(optarg).append("': 1 .. 8M bytes");
        }
        break;
      case 'a':
        o.all = true;
        break;
      case 'n':
        if (nd_app::parse_uint(optarg, kMaxIters, &v) && v >= kMinIters) {
          o.iters = uint32_t(v);
        } else {
          bad = "bad -n '";
          bad.append(optarg).append("': 5 .. 100000000, as perftest");
        }
        break;
      case 'm':
        if (nd_app::parse_uint(optarg, 4096, &v) && mtu_code(uint32_t(v)) != 0) {
          o.mtu = uint32_t(v);
        } else {
          bad = "bad -m '";
          bad.append(optarg).append("': 256, 512, 1024, 2048 or 4096");
        }
        break;
      case kGbits:
        o.gbits = true;
        break;
      case kServer:
        o.server = true;
        break;
      case kClient:
        o.host = optarg;
        break;
      case 'p':
        if (nd_app::parse_uint(optarg, 65535, &v) && v > 0) {
          o.tcp_port = uint16_t(v);
        } else {
          bad = "bad TCP port '";
          bad.append(optarg).append("'");
        }
        break;
      case kDev:
        o.device = optarg;
        break;
      case kIp:
        if (nd_app::parse_ipv4(optarg, &o.ipv4)) {
          have_ip = true;
        } else {
          bad = "bad --ip '";
          bad.append(optarg).append("'");
        }
        break;
      case kRetry:
        if (nd_app::parse_uint(optarg, 3600, &v)) {
          o.retry_s = unsigned(v);
        } else {
          bad = "bad --retry '";
          bad.append(optarg).append("': 0 .. 3600 seconds");
        }
        break;
      case kTimeout:
        if (nd_app::parse_uint(optarg, 3600, &v) && v > 0) {
          o.timeout_s = unsigned(v);
        } else {
          bad = "bad --timeout '";
          bad.append(optarg).append("': 1 .. 3600 seconds");
        }
        break;
      case kCapture:
        o.capture = optarg;
        break;
      case ':':
        bad = "option ";
        bad.append(argv[size_t(optind - 1)]).append(" needs a value");
        break;
      default:
        bad = "unknown option ";
        bad.append(argv[size_t(optind - 1)]).append(" in the perftest mode");
    }
  }
  if (bad.empty() && optind < argc) {
    bad = "unexpected argument '";
    bad.append(argv[size_t(optind)]).append("'");
  }
  nd_app::forget_getopt_state();
  if (!bad.empty()) return usage_error(bad);
  if (!have_test) return usage_error("--perftest needs a test");
  if (o.server == !o.host.empty()) return usage_error("the perftest mode needs exactly one of --server and --client=HOST");
  if (o.device.empty()) return usage_error("the perftest mode needs --dev (the DPDK port ndnic stands on)");
  if (!have_ip) return usage_error("the perftest mode needs --ip (ndnic's IPv4 address on --dev)");
  if (o.all && have_size) return usage_error("-a and -s exclude each other");
  if (o.all) o.size = kMaxSize;  // perftest sizes its buffers for the largest (force_dependecies)
  if (!o.size) o.size = o.test.kind == Kind::kBw ? kDefaultBwSize : kDefaultLatSize;
  if (!o.iters) o.iters = o.test.kind == Kind::kBw ? kDefaultBwIters : kDefaultLatIters;
  return ParsedPerftest{o, 0};
}

}  // namespace ndnic::ndperf::perftest
