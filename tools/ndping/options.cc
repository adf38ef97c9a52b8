#include "tools/ndping/options.h"

#include <getopt.h>

#include <cstdio>
#include <string_view>

#include "tools/nd_app/arguments.h"

namespace ndnic::ndping {
namespace {

// The SDK's usage text, reworded for getopt and ndnic's ports.
constexpr const char* kUsageHead =
    "Usage:\n"
    "  %1$s [EAL args --] [options]\n"
    "      both nodes in this process, over a net_ring pair (no NIC needed)\n"
    "  %1$s [EAL args --] -S --dev=DEV --ip=A.B.C.D [options]\n"
    "      the server, on a DPDK port\n"
    "  %1$s [EAL args --] -c PEER[:PORT] --dev=DEV --ip=A.B.C.D [options]\n"
    "      the client, on a DPDK port\n"
    "\n"
    "%2$s\n"
    "\n"
    "Options:\n"
    "  -S, --server             listen on --ip, port --port (the SDK's -s)\n"
    "  -c, --client=IP[:PORT]   connect to the server at IP (the SDK's -c <ip>[:<port>])\n"
    "      --port=PORT          the port to listen on or connect to (default %3$u)\n"
    "  -b, --blocking           wait for completions with INDCompletionQueue::Notify\n"
    "  -p, --polling            poll the completion queue (the default when every busy\n"
    "                           thread has a processor, see below)\n";
constexpr const char* kUsagePipeline =
    "  -q, --pipeline=N         at most N sends in flight (default 128)\n";
constexpr const char* kUsageTail =
    "      --sge=N              scatter/gather entries per transfer, 1-8 (the SDK's -n; default 1)\n"
    "  -s, --size=BYTES         run one size only (K and M suffixes: KiB, MiB)\n"
    "  -m, --max-size=BYTES     end the sweep 1, 2, 4, ... at this size (default 4M)\n"
    "  -n, --iters=N            iterations per size (default: fewer for larger sizes, so\n"
    "                           a full sweep takes seconds)\n"
    "      --no-check           do not verify payloads (default: the receiver checks the\n"
    "                           length of every message and the bytes of the first and\n"
    "                           last message of each size)\n"
    "      --timeout=S          fail after S seconds without a completion (default 10)\n"
    "      --retry=S            client: retry a refused or unanswered connect for S seconds\n"
    "      --capture=FILE       write every frame of our port (embedded: the client's) to a pcap\n"
    "  -h, --help               this text\n"
    "ndnic (server and client):\n"
    "      --dev=DEVARGS        the DPDK port: an ethdev port, or a vdev such as\n"
    "                           net_af_packet0,iface=eth1\n"
    "      --ip=A.B.C.D         our IPv4 address on it (ndnic answers ARP for it)\n"
    "\n"
    "Polling needs a processor for each busy thread: each device's worker lcore and each\n"
    "application thread, two of each in the embedded mode, one otherwise. Without EAL\n"
    "-l/--lcores, lcore 0 and the workers get processors of their own when the process has\n"
    "enough. With fewer, or with lcores that share processors, the waits block unless -p is\n"
    "given. A server and a client on one host want their workers on different processors,\n"
    "e.g. the EAL arguments --lcores '0@(0,1),1@0' for one, '0@(0,1),1@1' for the other.\n"
    "\n"
    "Columns: Size (bytes), Iter, Latency (us), CPU (%: 100 per busy processor, as the SDK's),\n"
    "Bytes/Sec.\n";

constexpr const char* kPingAbout =
    "ndping: one-way Send/Receive, pipelined. The client sends Iter messages per size with\n"
    "up to -q of them in flight, paced by the server's receive credits; Latency is the time\n"
    "per message and Bytes/Sec the one-way rate.";
constexpr const char* kPingPongAbout =
    "ndpingpong: Send/Receive ping-pong. The client sends, the server echoes a message of the\n"
    "same size, Iter times per size; Latency is half the round trip and Bytes/Sec counts\n"
    "both directions.";

enum LongOnly { kPort = 256, kSge, kNoCheck, kTimeout, kRetry, kCapture, kDev, kIp };

using nd_app::parse_ipv4;
using nd_app::parse_uint;

/// BYTES with an optional K or M (binary) suffix, 1 .. kMaxXfer.
bool parse_size(const char* s, unsigned long* out) { return nd_app::parse_size(s, kMaxXfer, out); }

/// IP[:PORT] as the SDK's <ip>[:<port>].
bool parse_peer(const char* s, uint32_t* ip, uint16_t* port) {
  std::string_view v(s);
  const size_t colon = v.find(':');
  if (colon != std::string_view::npos) {
    if (!nd_app::parse_port(std::string(v.substr(colon + 1)).c_str(), port)) return false;
  }
  return parse_ipv4(std::string(v.substr(0, colon)).c_str(), ip);
}

void print_usage(FILE* f, Tool tool) {
  const char* name = tool_name(tool);
  std::fprintf(f, kUsageHead, name, tool == Tool::kPing ? kPingAbout : kPingPongAbout,
               unsigned(tool == Tool::kPing ? kPingPort : kPingPongPort));
  if (tool == Tool::kPing) std::fputs(kUsagePipeline, f);
  std::fputs(kUsageTail, f);
}

Parsed usage_error(Tool tool, const std::string& what) {
  return nd_app::usage_error<Options>(tool_name(tool), what);
}

}  // namespace

const char* tool_name(Tool tool) { return tool == Tool::kPing ? "ndping" : "ndpingpong"; }

Parsed parse_options(Tool tool, const std::vector<std::string>& args) {
  std::vector<char*> argv{const_cast<char*>(tool_name(tool))};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const bool ping = tool == Tool::kPing;
  std::vector<option> longopts = {
      {"server", no_argument, nullptr, 'S'},        {"client", required_argument, nullptr, 'c'},
      {"port", required_argument, nullptr, kPort},  {"blocking", no_argument, nullptr, 'b'},
      {"polling", no_argument, nullptr, 'p'},       {"sge", required_argument, nullptr, kSge},
      {"size", required_argument, nullptr, 's'},    {"max-size", required_argument, nullptr, 'm'},
      {"iters", required_argument, nullptr, 'n'},   {"no-check", no_argument, nullptr, kNoCheck},
      {"timeout", required_argument, nullptr, kTimeout}, {"retry", required_argument, nullptr, kRetry},
      {"capture", required_argument, nullptr, kCapture}, {"dev", required_argument, nullptr, kDev},
      {"ip", required_argument, nullptr, kIp},      {"help", no_argument, nullptr, 'h'}};
  // ndpingpong has no -q: the SDK's parses it and never uses it there.
  if (ping) longopts.push_back({"pipeline", required_argument, nullptr, 'q'});
  longopts.push_back({nullptr, 0, nullptr, 0});
  const char* short_opts = ping ? ":Sc:bps:m:n:q:h" : ":Sc:bps:m:n:h";

  Options o;
  o.tool = tool;
  o.port = ping ? kPingPort : kPingPongPort;
  bool server = false, client = false, blocking = false, polling = false, size = false, max_size = false;
  bool retry = false;
  uint16_t peer_port = 0;
  opterr = 0;  // our own messages, naming the option as the user wrote it
  optind = 0;  // a fresh getopt: reinitialised, whatever ran it before
  const int argc = int(argv.size()) - 1;
  for (int c; (c = getopt_long(argc, argv.data(), short_opts, longopts.data(), nullptr)) != -1;) {
    unsigned long v = 0;
    bool ok = true;
    switch (c) {
      case 'h':
        print_usage(stdout, tool);
        return Parsed{std::nullopt, 0};
      case 'S':
        server = true;
        break;
      case 'c':
        client = true;
        ok = parse_peer(optarg, &o.peer_ipv4, &peer_port);
        break;
      case kPort:
        ok = nd_app::parse_port(optarg, &o.port);
        break;
      case 'b':
        blocking = true;
        break;
      case 'p':
        polling = true;
        break;
      case 'q':
        ok = parse_uint(optarg, 1024, &v) && v > 0;
        o.pipeline = uint32_t(v);
        break;
      case kSge:
        ok = parse_uint(optarg, kMaxSge, &v) && v > 0;
        o.sge = uint32_t(v);
        break;
      case 's':
        size = true;
        ok = parse_size(optarg, &v);
        o.min_size = o.max_size = uint32_t(v);
        break;
      case 'm':
        max_size = true;
        ok = parse_size(optarg, &v);
        o.max_size = uint32_t(v);
        break;
      case 'n':
        ok = parse_uint(optarg, 1ul << 30, &v) && v > 0;
        o.iters = uint32_t(v);
        break;
      case kNoCheck:
        o.check = false;
        break;
      case kTimeout:
        ok = nd_app::parse_seconds(optarg, 1, &o.timeout_s);
        break;
      case kRetry:
        retry = true;
        ok = nd_app::parse_seconds(optarg, 0, &o.retry_s);
        break;
      case kCapture:
        o.capture = optarg;
        break;
      case kDev:
        o.device = optarg;
        break;
      case kIp:
        ok = parse_ipv4(optarg, &o.ipv4);
        break;
      default:
        return usage_error(tool, nd_app::getopt_problem(c, longopts.data(), argv.data()));
    }
    if (!ok) return usage_error(tool, nd_app::bad_value(c, longopts.data(), optarg));
  }
  const int first_operand = optind;
  nd_app::forget_getopt_state();
  if (first_operand < argc) {
    std::string what = "unexpected argument: ";
    what.append(argv[first_operand]);
    return usage_error(tool, what);
  }
  if (server && client) return usage_error(tool, "give --server or --client, not both");
  if (blocking && polling) return usage_error(tool, "give --blocking or --polling, not both");
  if (size && max_size) return usage_error(tool, "give --size or --max-size, not both");
  o.blocking = blocking;
  o.wait_chosen = blocking || polling;
  o.role = server ? Role::kServer : client ? Role::kClient : Role::kEmbedded;
  if (peer_port) o.port = peer_port;
  const std::string roles = nd_app::role_problem({server, client, !o.device.empty(), o.ipv4, o.peer_ipv4, retry});
  if (!roles.empty()) return usage_error(tool, roles);
  return Parsed{o, 0};
}

}  // namespace ndnic::ndping
