#include "tools/rc_pingpong/options.h"

#include <arpa/inet.h>
#include <getopt.h>

#include <cstdio>
#include <cstdlib>

namespace ndnic::rc_pingpong {
namespace {

constexpr const char* kUsage =
    "Usage:\n"
    "  rc_pingpong [EAL args] -- [options]          start a server and wait for connection\n"
    "  rc_pingpong [EAL args] -- [options] <host>   connect to server at <host>\n"
    "\n"
    "Options (as ibv_rc_pingpong):\n"
    "  -p, --port=<port>      listen on/connect to port <port> (default 18515)\n"
    "  -s, --size=<size>      size of message to exchange (default 4096)\n"
    "  -m, --mtu=<size>       path MTU (default 1024)\n"
    "  -r, --rx-depth=<dep>   number of receives to post at a time (default 500)\n"
    "  -n, --iters=<iters>    number of exchanges (default 1000)\n"
    "  -g, --gid-idx=<index>  advertise our GID (ndnic has one: ::ffff:<--ip>)\n"
    "ndnic:\n"
    "  --ip=A.B.C.D           our IPv4 address on the segment (default 198.18.0.3)\n"
    "  --dev=<device>         ethdev port or vdev (default net_af_packet0,iface=rxetap0)\n"
    "  --capture=<file>       write every frame sent and received to a pcap file\n"
    "  --retry=<seconds>      client: keep trying to connect while nobody listens (default 0)\n";

enum LongOnly { kIp = 256, kDev, kCapture, kRetry };

bool parse_uint(const char* s, unsigned long max, unsigned long* out) {
  char* end = nullptr;
  const unsigned long v = std::strtoul(s, &end, 0);
  if (*s == '\0' || *end != '\0' || v > max) return false;
  *out = v;
  return true;
}

bool valid_mtu(unsigned long m) { return m == 256 || m == 512 || m == 1024 || m == 2048 || m == 4096; }

}  // namespace

std::optional<Options> parse_options(const std::vector<std::string>& args) {
  std::vector<char*> argv{const_cast<char*>("rc_pingpong")};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  static const option kLong[] = {
      {"port", required_argument, nullptr, 'p'},     {"size", required_argument, nullptr, 's'},
      {"mtu", required_argument, nullptr, 'm'},      {"rx-depth", required_argument, nullptr, 'r'},
      {"iters", required_argument, nullptr, 'n'},    {"gid-idx", required_argument, nullptr, 'g'},
      {"ip", required_argument, nullptr, kIp},       {"dev", required_argument, nullptr, kDev},
      {"capture", required_argument, nullptr, kCapture}, {"retry", required_argument, nullptr, kRetry},
      {"help", no_argument, nullptr, 'h'},           {nullptr, 0, nullptr, 0}};
  Options o;
  optind = 0;  // EAL ran getopt over its own arguments first: start over
  const int argc = int(argv.size()) - 1;
  for (int c; (c = getopt_long(argc, argv.data(), "p:s:m:r:n:g:h", kLong, nullptr)) != -1;) {
    unsigned long v = 0;
    bool ok = true;
    switch (c) {
      case 'p':
        ok = parse_uint(optarg, 65535, &v);
        o.port = uint16_t(v);
        break;
      case 's':
        ok = parse_uint(optarg, 1ul << 30, &v);
        o.size = uint32_t(v);
        break;
      case 'm':
        ok = parse_uint(optarg, 4096, &v) && valid_mtu(v);
        o.mtu = uint32_t(v);
        break;
      case 'r':
        ok = parse_uint(optarg, 1023, &v) && v >= 2;
        o.rx_depth = uint32_t(v);
        break;
      case 'n':
        ok = parse_uint(optarg, 1u << 31, &v) && v > 0;
        o.iters = uint32_t(v);
        break;
      case 'g':
        ok = parse_uint(optarg, 255, &v);
        o.gid_index = int(v);
        break;
      case kIp: {
        in_addr a{};
        ok = inet_pton(AF_INET, optarg, &a) == 1;
        o.ipv4 = ntohl(a.s_addr);
        break;
      }
      case kDev:
        o.device = optarg;
        break;
      case kCapture:
        o.capture = optarg;
        break;
      case kRetry:
        ok = parse_uint(optarg, 3600, &v);
        o.retry_s = unsigned(v);
        break;
      default:
        ok = false;
    }
    if (!ok || c == 'h') {
      if (c != 'h' && c != '?') std::fprintf(stderr, "rc_pingpong: bad value for option: %s\n", argv[optind - 1]);
      std::printf("%s", kUsage);
      return std::nullopt;
    }
  }
  if (optind == argc - 1) {
    o.host = argv[optind];
  } else if (optind < argc) {
    std::printf("%s", kUsage);
    return std::nullopt;
  }
  return o;
}

}  // namespace ndnic::rc_pingpong
