#include <cstdio>
#include <cstring>

#include "tools/nd_app/arguments.h"
#include "tools/nd_rping/rping.h"

namespace ndnic::nd_rping {
namespace {

void usage() {
  std::printf(
      "usage: nd_rping [EAL args] -- -s [-vVd] [-S size] [-a addr] [-p port] --ip A.B.C.D --dev DEVARGS\n"
      "       nd_rping [EAL args] -- -c [-vVd] [-S size] [-C count] -a addr [-p port] --ip A.B.C.D --dev DEVARGS\n"
      "  -c          client\n"
      "  -s          server\n"
      "  -v          display ping data to stdout\n"
      "  -V          validate ping data\n"
      "  -d          debug printfs\n"
      "  -S size     ping data size (%u..%u, default %u)\n"
      "  -C count    ping count times (default: until stopped)\n"
      "  -a addr     client: the server's IPv4 address; server: ours (default --ip)\n"
      "  -p port     rdma_cm port (default %u)\n"
      "  --ip A.B.C.D       this node's IPv4 address on the segment\n"
      "  --dev DEVARGS      the DPDK port, e.g. net_af_packet0,iface=tap0\n"
      "  --capture FILE     write the port's frames to a pcap file\n"
      "  --retry S          client: retry a refused connect for S seconds\n"
      "  --timeout S        give up when the peer is silent for S seconds (default 30)\n",
      kMinSize, kMaxSize, kDefaultSize, kDefaultPort);
}

bool parse_ipv4(const std::string& s, uint32_t* out) { return nd_app::parse_ipv4(s.c_str(), out); }

bool parse_uint(const std::string& s, unsigned long max, unsigned long* out) {
  return nd_app::parse_uint(s.c_str(), max, out);
}

}  // namespace

bool parse_options(const std::vector<std::string>& args, Options* o, int* exit_code) {
  *exit_code = 1;
  bool client = false;
  for (size_t i = 0; i < args.size(); i++) {
    const std::string& a = args[i];
    auto value = [&](std::string* v) {
      if (i + 1 >= args.size()) {
        std::fprintf(stderr, "nd_rping: %s needs a value\n", a.c_str());
        return false;
      }
      *v = args[++i];
      return true;
    };
    std::string v;
    unsigned long n = 0;
    if (a == "-h" || a == "--help") {
      usage();
      *exit_code = 0;
      return false;
    } else if (a == "-s") {
      o->server = true;
    } else if (a == "-c") {
      client = true;
    } else if (a == "-v") {
      o->verbose = true;
    } else if (a == "-V") {
      o->validate = true;
    } else if (a == "-d") {
      o->debug = true;
    } else if (a == "-S") {
      if (!value(&v)) return false;
      if (!parse_uint(v, kMaxSize, &n) || n < kMinSize) {
        std::fprintf(stderr, "Invalid size %s (valid range is %u to %u)\n", v.c_str(), kMinSize, kMaxSize);
        return false;
      }
      o->size = uint32_t(n);
    } else if (a == "-C") {
      if (!value(&v)) return false;
      if (!parse_uint(v, 0x7fffffff, &n)) {
        std::fprintf(stderr, "Invalid count %s\n", v.c_str());
        return false;
      }
      o->count = uint32_t(n);
    } else if (a == "-a") {
      if (!value(&v)) return false;
      if (!parse_ipv4(v, &o->peer_ipv4)) {
        std::fprintf(stderr, "nd_rping: -a %s: not an IPv4 address\n", v.c_str());
        return false;
      }
    } else if (a == "-p") {
      if (!value(&v)) return false;
      if (!nd_app::parse_port(v.c_str(), &o->port)) {
        std::fprintf(stderr, "nd_rping: -p %s: not a port\n", v.c_str());
        return false;
      }
    } else if (a == "--ip") {
      if (!value(&v)) return false;
      if (!parse_ipv4(v, &o->ipv4)) {
        std::fprintf(stderr, "nd_rping: --ip %s: not an IPv4 address\n", v.c_str());
        return false;
      }
    } else if (a == "--dev") {
      if (!value(&o->device)) return false;
    } else if (a == "--capture") {
      if (!value(&o->capture)) return false;
    } else if (a == "--retry" || a == "--timeout") {
      if (!value(&v)) return false;
      if (!parse_uint(v, 86400, &n)) {
        std::fprintf(stderr, "nd_rping: %s %s: not a number of seconds\n", a.c_str(), v.c_str());
        return false;
      }
      (a == "--retry" ? o->retry_s : o->timeout_s) = unsigned(n);
    } else {
      std::fprintf(stderr, "nd_rping: unknown argument %s (try --help)\n", a.c_str());
      return false;
    }
  }
  if (o->server == client) {
    std::fprintf(stderr, "nd_rping: give one of -s (server) and -c (client)\n");
    return false;
  }
  if (!o->ipv4 || o->device.empty()) {
    std::fprintf(stderr, "nd_rping: --ip and --dev are required (the ndnic port)\n");
    return false;
  }
  if (client && !o->peer_ipv4) {
    std::fprintf(stderr, "nd_rping: the client needs the server's address (-a)\n");
    return false;
  }
  if (o->server && o->peer_ipv4 && o->peer_ipv4 != o->ipv4) {
    std::fprintf(stderr, "nd_rping: -a must be this node's address (--ip) on the server\n");
    return false;
  }
  return true;
}

void fill_ping(char* buf, uint32_t size, int ping, int* start) {
  const int cc = std::snprintf(buf, size, "rdma-ping-%d: ", ping);
  unsigned char c = static_cast<unsigned char>(*start);
  for (uint32_t i = uint32_t(cc); i < size; i++) {
    buf[i] = char(c);
    if (++c > 122) c = 65;
  }
  if (++*start > 122) *start = 65;
  buf[size - 1] = 0;
}

}  // namespace ndnic::nd_rping
