#include "tools/ndperf/options.h"

#include <getopt.h>

#include <algorithm>
#include <cstdio>
#include <string_view>

#include "ndnic/ndnic_ext.h"
#include "tools/nd_app/arguments.h"

namespace ndnic::ndperf {
namespace {

constexpr const char* kUsage =
    "Usage:\n"
    "  ndperf [EAL args --] [options]                            both ends in this process\n"
    "  ndperf [EAL args --] --server --dev=DEV --ip=A.B.C.D [options]      the server\n"
    "  ndperf [EAL args --] --client=IP --dev=DEV --ip=A.B.C.D [options]   the client\n"
    "  ndperf [EAL args --] --perftest=TEST --server|--client=HOST --dev=DEV --ip=A.B.C.D ...\n"
    "                       one test against perftest itself (ib_send_bw, ...) on another host:\n"
    "                       its TCP protocol, verbs engine; see ndperf --perftest=send_bw --help\n"
    "\n"
    "perftest for ndnic: RDMA bandwidth, latency and window-cycle tests through the Network\n"
    "Direct v1 API (atomics through ndnic's extension), with baselines measured the same way\n"
    "in the same run: raw UDP frames over the same ports and lcores, and memcpy on one core.\n"
    "Without --server/--client both ends run here over a net_ring pair (no NIC needed), each\n"
    "an ndnic device on a worker lcore of its own.\n"
    "\n"
    "Tests (default: --set loopback, every test):\n"
    "  -T, --tests=LIST         comma-separated: send_bw, write_bw, read_bw, atomic_bw,\n"
    "                           send_lat, write_lat, read_lat, sendinv, raw_bw, raw_lat, memcpy\n"
    "      --set=NAME           loopback (every test), rdma, bw, lat, baseline\n"
    "Sizes and counts:\n"
    "  -s, --size=BYTES         message size, 1 B .. 8M (K and M suffixes); default 65536 for\n"
    "                           bandwidth tests, 2 for latency tests\n"
    "  -a, --all                sweep 2 B .. 8 MiB (powers of two)\n"
    "                           (atomic_bw always moves 8 bytes, sendinv 4 KiB)\n"
    "  -n, --iters=N            iterations per size (bandwidth: per QP); default 5000 for\n"
    "                           bandwidth, 1000 for latency, fewer for large messages\n"
    "  -D, --duration=S         run each size for S seconds instead\n"
    "  -q, --qps=N              QPs for bandwidth tests, 1-64 (default 1)\n"
    "      --threads=N          application threads per node for send_bw, write_bw and read_bw:\n"
    "                           the QPs are dealt out to them, each thread with its own CQ on\n"
    "                           a worker lcore of its own (default: one per worker lcore of a\n"
    "                           node, at most -q, at most the main lcore's processors allow)\n"
    "  -t, --tx-depth=N         requests in flight per QP, 1-1024 (default 128)\n"
    "  -m, --mtu=BYTES          RoCE path MTU: 256, 512, 1024, 2048 or 4096 (default 1024)\n"
    "Waiting for completions:\n"
    "  -e, --events             wait with INDCompletionQueue::Notify\n"
    "      --poll               poll the completion queue\n"
    "                           (default: poll when every busy thread has a processor)\n"
    "      --notify-watch=US    with -e on worker lcores: how long a wait spins on the\n"
    "                           completion queue before it sleeps (0: at once; default 50\n"
    "                           where the thread runs apart from the workers, else 0)\n"
    "      --progress=MODE      who runs each ndnic device: workers (worker lcores of its\n"
    "                           own) or thread (the application thread, inside its ND\n"
    "                           calls: run to completion). Default: workers when each\n"
    "                           has a processor of its own, thread otherwise\n"
    "Output:\n"
    "      --json=FILE          results as JSON (- for stdout; the tables then go to stderr)\n"
    "      --csv=FILE           results as CSV (- for stdout)\n"
    "      --plot=FILE.png      bandwidth and latency against message size (needs gnuplot)\n"
    "      --stats              print each node's port and QP counters when its device stops\n"
    "                           (live: /ndnic/ commands of DPDK telemetry, with EAL's --telemetry)\n"
    "Server and client:\n"
    "      --server             serve the tests a client asks for, then exit\n"
    "      --client=IP          run the tests against the server at IP\n"
    "      --dev=DEVARGS        the DPDK port: an ethdev port or a vdev (net_af_packet0,iface=eth1)\n"
    "      --ip=A.B.C.D         our IPv4 address on it (ndnic answers ARP for it)\n"
    "  -p, --port=PORT          the ND port the server listens on (default 18515)\n"
    "      --retry=S            client: wait up to S seconds for a server that is starting\n"
    "      --timeout=S          give up after S seconds without a completion (default 10)\n"
    "  -h, --help               this text\n"
    "\n"
    "EAL arguments come first, then --, then ndperf's. Without -l/--lcores, lcore 0 runs the\n"
    "application threads and each ndnic device polls on a worker lcore; more worker lcores\n"
    "(e.g. --lcores '0@(0,1),1@1,2@1') spread a node's QPs over them. Latency tests use one QP.\n"
    "Latency is half the round trip for the ping-pong tests (send_lat, write_lat, raw_lat) and\n"
    "the whole operation for read_lat, as in perftest.\n";

enum LongOnly { kSet = 256, kThreads, kPoll, kProgress, kJson, kCsv, kPlot, kStats, kServer, kClient, kDev, kIp, kRetry, kTimeout, kNotifyWatch };

using nd_app::parse_ipv4;
using nd_app::parse_uint;

/// BYTES with an optional K or M (binary) suffix, 1 .. kMaxSize.
bool parse_size(const char* s, unsigned long* out) { return nd_app::parse_size(s, kMaxSize, out); }

Parsed usage_error(const std::string& what) { return nd_app::usage_error<Options>("ndperf", what); }

bool add_tests(std::string_view list, std::vector<Test>* tests, std::string* bad) {
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string_view one = list.substr(0, comma);
    const std::optional<Test> t = test_by_name(one);
    if (!t) {
      *bad = std::string(one);
      return false;
    }
    if (std::find(tests->begin(), tests->end(), *t) == tests->end()) tests->push_back(*t);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
  }
  return true;
}

}  // namespace

const char* role_name(Role r) {
  switch (r) {
    case Role::kEmbedded: return "embedded";
    case Role::kServer: return "server";
    case Role::kClient: return "client";
  }
  return "?";
}

const char* drive_name(Drive d) {
  return d == Drive::kThread ? "application threads (run to completion)" : "worker lcores";
}

Parsed parse_options(const std::vector<std::string>& args) {
  std::vector<char*> argv{const_cast<char*>("ndperf")};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  static const option kLong[] = {
      {"tests", required_argument, nullptr, 'T'},   {"set", required_argument, nullptr, kSet},
      {"size", required_argument, nullptr, 's'},    {"all", no_argument, nullptr, 'a'},
      {"iters", required_argument, nullptr, 'n'},   {"duration", required_argument, nullptr, 'D'},
      {"qps", required_argument, nullptr, 'q'},     {"tx-depth", required_argument, nullptr, 't'},
      {"threads", required_argument, nullptr, kThreads},
      {"mtu", required_argument, nullptr, 'm'},     {"events", no_argument, nullptr, 'e'},
      {"poll", no_argument, nullptr, kPoll},        {"json", required_argument, nullptr, kJson},
      {"notify-watch", required_argument, nullptr, kNotifyWatch},
      {"progress", required_argument, nullptr, kProgress},
      {"csv", required_argument, nullptr, kCsv},    {"plot", required_argument, nullptr, kPlot},
      {"stats", no_argument, nullptr, kStats},
      {"server", no_argument, nullptr, kServer},    {"client", required_argument, nullptr, kClient},
      {"dev", required_argument, nullptr, kDev},    {"ip", required_argument, nullptr, kIp},
      {"port", required_argument, nullptr, 'p'},    {"retry", required_argument, nullptr, kRetry},
      {"timeout", required_argument, nullptr, kTimeout}, {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0}};

  Options o;
  bool server = false, client = false, poll = false, retry = false, chose_tests = false;
  bool client_only = false;  // an option that only the client (or the embedded mode) takes
  std::string client_only_name;
  opterr = 0;  // our own messages, naming the option as the user wrote it
  optind = 0;  // a fresh getopt, whatever ran before
  const int argc = int(argv.size()) - 1;
  for (int c; (c = getopt_long(argc, argv.data(), ":T:s:an:D:q:t:m:ep:h", kLong, nullptr)) != -1;) {
    unsigned long v = 0;
    bool ok = true;
    std::string bad;
    if (c == 'T' || c == kSet || c == 's' || c == 'a' || c == 'n' || c == 'D' || c == 'q' || c == 't' ||
        c == kCsv || c == kPlot) {
      if (!client_only) client_only_name = nd_app::option_text(c, kLong);
      client_only = true;
    }
    switch (c) {
      case 'h':
        std::fputs(kUsage, stdout);
        nd_app::forget_getopt_state();
        return Parsed{std::nullopt, 0};
      case 'T':
        chose_tests = true;
        if (!add_tests(optarg, &o.tests, &bad)) {
          nd_app::forget_getopt_state();
          std::string what("unknown test '");
          what.append(bad).append("' (tests: ").append(test_names()).append(")");
          return usage_error(what);
        }
        break;
      case kSet: {
        chose_tests = true;
        const std::optional<std::vector<Test>> set = test_set(optarg);
        if (!set) {
          std::string what("unknown test set '");
          what.append(optarg).append("' (sets: ").append(test_set_names()).append(")");
          nd_app::forget_getopt_state();  // after the last use of optarg: it clears it
          return usage_error(what);
        }
        for (Test t : *set)
          if (std::find(o.tests.begin(), o.tests.end(), t) == o.tests.end()) o.tests.push_back(t);
        break;
      }
      case 's':
        ok = parse_size(optarg, &v);
        o.size = uint32_t(v);
        break;
      case 'a':
        o.sweep = true;
        break;
      case 'n':
        ok = parse_uint(optarg, 1ul << 30, &v) && v > 0;
        o.iters = uint32_t(v);
        break;
      case 'D':
        ok = parse_uint(optarg, 3600, &v) && v > 0;
        o.duration_s = uint32_t(v);
        break;
      case 'q':
        ok = parse_uint(optarg, kMaxQps, &v) && v > 0;
        o.qps = uint32_t(v);
        break;
      case kThreads:
        ok = parse_uint(optarg, kMaxQps, &v) && v > 0;
        o.threads = uint32_t(v);
        break;
      case 't':
        ok = parse_uint(optarg, kMaxTxDepth, &v) && v > 0;
        o.tx_depth = uint32_t(v);
        break;
      case 'm':
        ok = parse_uint(optarg, 4096, &v) && (v == 256 || v == 512 || v == 1024 || v == 2048 || v == 4096);
        o.mtu = uint32_t(v);
        break;
      case 'e':
        o.events = true;
        o.wait_chosen = true;
        break;
      case kPoll:
        poll = true;
        o.wait_chosen = true;
        break;
      case kProgress:
        ok = std::string(optarg) == "workers" || std::string(optarg) == "thread";
        o.drive = std::string(optarg) == "thread" ? Drive::kThread : Drive::kWorkers;
        o.drive_chosen = true;
        break;
      case kJson:
        o.json_path = optarg;
        ok = !o.json_path.empty();
        break;
      case kCsv:
        o.csv_path = optarg;
        ok = !o.csv_path.empty();
        break;
      case kPlot:
        o.plot_path = optarg;
        ok = !o.plot_path.empty() && o.plot_path != "-";
        break;
      case kStats:
        o.stats = true;
        break;
      case kServer:
        server = true;
        break;
      case kClient:
        client = true;
        ok = parse_ipv4(optarg, &o.peer_ipv4);
        break;
      case kDev:
        o.device = optarg;
        ok = !o.device.empty();
        break;
      case kIp:
        ok = parse_ipv4(optarg, &o.ipv4);
        break;
      case 'p':
        ok = nd_app::parse_port(optarg, &o.port);
        break;
      case kRetry:
        retry = true;
        ok = nd_app::parse_seconds(optarg, 0, &o.retry_s);
        break;
      case kTimeout:
        ok = nd_app::parse_seconds(optarg, 1, &o.timeout_s);
        break;
      case kNotifyWatch:
        ok = parse_uint(optarg, NDNIC_NOTIFY_WATCH_MAX_US, &v);
        o.notify_watch_us = int64_t(v);
        break;
      default: {
        const std::string what = nd_app::getopt_problem(c, kLong, argv.data());
        nd_app::forget_getopt_state();
        return usage_error(what);
      }
    }
    if (!ok) {
      std::string what = nd_app::bad_value(c, kLong, optarg);
      if (c == 'm') what.append(" (256, 512, 1024, 2048 or 4096)");
      if (c == 's') what.append(" (1 to 8M)");
      nd_app::forget_getopt_state();
      return usage_error(what);
    }
  }
  const int first_operand = optind;
  nd_app::forget_getopt_state();
  if (first_operand < argc) return usage_error(std::string("unexpected argument: ") + argv[first_operand]);
  if (server && client) return usage_error("give --server or --client, not both");
  if (o.events && poll) return usage_error("give --events or --poll, not both");
  if (o.size && o.sweep) return usage_error("give --size or --all, not both");
  if (o.iters && o.duration_s) return usage_error("give --iters or --duration, not both");
  if (o.json_path == "-" && o.csv_path == "-") return usage_error("only one of --json and --csv can go to stdout");
  o.role = server ? Role::kServer : client ? Role::kClient : Role::kEmbedded;
  const std::string roles = nd_app::role_problem({server, client, !o.device.empty(), o.ipv4, o.peer_ipv4, retry});
  if (!roles.empty()) return usage_error(roles);
  if (o.role == Role::kServer && client_only)
    return usage_error(client_only_name + " goes to the client: the server runs what the client asks for");
  if (o.role != Role::kServer && !chose_tests) o.tests = *test_set("loopback");
  return Parsed{o, 0};
}

}  // namespace ndnic::ndperf
