// FI_NDNIC_* settings and the process's one NIC: EAL, port, engine and CM agent.
#include "fabric/runtime.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>

#include <rdma/providers/fi_log.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <sstream>
#include <vector>

namespace ndnic::fabric {
namespace {

std::mutex g_mu;
Runtime* g_runtime = nullptr;
bool g_failed = false;  ///< EAL starts once per process: a failed start is not tried again

/// Says why the provider cannot run, on stderr (the application's user reads it; once, though
/// libfabric asks again for each provider list it builds) and in the log.
void complain(const std::string& why) {
  static std::string said;
  FI_WARN(&g_prov, FI_LOG_CORE, "%s\n", why.c_str());
  if (why == said) return;
  said = why;
  std::fprintf(stderr, "ndnic (libfabric provider): %s\n", why.c_str());
}

std::string param_str(const char* name) {
  char* v = nullptr;
  if (fi_param_get_str(&g_prov, name, &v) != FI_SUCCESS || !v) return {};
  return v;
}

/// Reads and checks the settings; false with the reason.
bool read_settings(Settings* s, std::string* why) {
  s->device = param_str("dev");
  if (s->device.empty()) {
    *why = "FI_NDNIC_DEV is not set: name the DPDK port, e.g. FI_NDNIC_DEV=net_vhost0,iface=/tmp/nd.sock";
    return false;
  }
  const std::string ip = param_str("ip");
  in_addr a{};
  if (ip.empty() || inet_pton(AF_INET, ip.c_str(), &a) != 1 || a.s_addr == 0) {
    *why = ip.empty() ? "FI_NDNIC_IP is not set: give the port's IPv4 address, e.g. FI_NDNIC_IP=198.18.0.1"
                      : "FI_NDNIC_IP=" + ip + " is not an IPv4 address";
    return false;
  }
  s->ipv4 = ntohl(a.s_addr);
  s->eal_args = param_str("eal_args");
  int mtu = 0;
  if (fi_param_get_int(&g_prov, "mtu", &mtu) == FI_SUCCESS) {
    if (mtu != 256 && mtu != 512 && mtu != 1024 && mtu != 2048 && mtu != 4096) {
      *why = "FI_NDNIC_MTU=" + std::to_string(mtu) + " is not a RoCE path MTU (256, 512, 1024, 2048 or 4096)";
      return false;
    }
    s->path_mtu = uint32_t(mtu);
  }
  int lcore = -1;
  if (fi_param_get_int(&g_prov, "lcore", &lcore) == FI_SUCCESS) {
    if (lcore <= 0 || lcore >= RTE_MAX_LCORE) {
      *why = "FI_NDNIC_LCORE=" + std::to_string(lcore) + " is not a worker lcore (1 .. " +
             std::to_string(RTE_MAX_LCORE - 1) + "; lcore 0 is the main one)";
      return false;
    }
    s->lcore = lcore;
  }
  int rnr = 7;
  if (fi_param_get_int(&g_prov, "rnr_retry", &rnr) == FI_SUCCESS) {
    if (rnr < 0 || rnr > 7) {
      *why = "FI_NDNIC_RNR_RETRY=" + std::to_string(rnr) + " is not an RNR retry count (0 .. 6, or 7: no limit)";
      return false;
    }
    s->rnr_retry = uint8_t(rnr);
  }
  return true;
}

/// Starts EAL with FI_NDNIC_EAL_ARGS over ndnic's defaults. EAL pins the calling thread to the
/// main lcore's CPU: the application's thread gets its own affinity back.
bool start_eal(const Settings& s, std::string* why) {
  static std::vector<std::string> args{"libndnic-fi"};
  std::istringstream in(s.eal_args);
  for (std::string a; in >> a;) args.push_back(a);
  args.push_back("--");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  glue::EalDefaults defaults;
  const std::string lcores = s.lcore > 0 ? "0," + std::to_string(s.lcore) : "0";
  defaults.options = {{"-l", lcores}, {"--no-pci", ""}, {"--log-level", "lib.eal:warning"}, {"--no-telemetry", ""}};
  defaults.announce = false;  // the application's stdout is its own
  cpu_set_t mine;
  const bool had = pthread_getaffinity_np(pthread_self(), sizeof mine, &mine) == 0;
  const glue::EalResult r = glue::eal_init(int(argv.size()), argv.data(), defaults);
  if (had) pthread_setaffinity_np(pthread_self(), sizeof mine, &mine);
  if (!r.memory_line.empty()) FI_INFO(&g_prov, FI_LOG_CORE, "%s\n", r.memory_line.c_str());
  if (!r.ok) *why = "EAL (FI_NDNIC_EAL_ARGS='" + s.eal_args + "'): " + r.error;
  return r.ok;
}

/// Port, engine and agent on a started EAL; false with the reason.
bool bring_up(Runtime* rt, std::string* why) {
  const Settings& s = rt->settings;
  glue::PortConfig pc;
  pc.device = s.device;
  pc.ipv4 = s.ipv4;
  if (s.path_mtu > 1024) {  // room for a full RoCE packet: headers and ICRC over the payload
    pc.mtu = uint16_t(s.path_mtu + 128);
    pc.mbuf_data_room = uint16_t(pc.mtu + 128 + RTE_PKTMBUF_HEADROOM);
  }
  if (!rt->port.open(pc)) {
    *why = "FI_NDNIC_DEV=" + s.device + ": " + rt->port.error();
    return false;
  }
  nic::DeviceConfig dc;
  dc.ports = {&rt->port};
  if (s.lcore > 0) dc.lcores = {unsigned(s.lcore)};
  if (!rt->dev.open(dc)) {
    *why = "the engine (FI_NDNIC_LCORE must be one of EAL's lcores): " + rt->dev.error();
    rt->port.close();
    return false;
  }
  rt->app_driven = rt->dev.app_driven();
  cm::Config cc;
  cc.path_mtu = s.path_mtu;
  cc.rnr_retry_count = s.rnr_retry;
  rt->agent = std::make_unique<cm::Agent>(rt->dev, rt->port, cc);
  if (!rt->agent->start()) {
    *why = "the connection manager: " + rt->agent->error();
    rt->agent.reset();
    rt->dev.close();
    rt->port.close();
    return false;
  }
  return true;
}

}  // namespace

void define_params() {
  fi_param_define(&g_prov, "dev", FI_PARAM_STRING,
                  "The DPDK port ndnic runs on: devargs of a virtual device to create "
                  "(net_vhost0,iface=/tmp/nd.sock; net_virtio_user0,path=/tmp/nd.sock; "
                  "net_af_packet0,iface=veth0), or a probed port's name or number. Required.");
  fi_param_define(&g_prov, "ip", FI_PARAM_STRING, "The port's IPv4 address (RoCEv2 and the CM use it). Required.");
  fi_param_define(&g_prov, "eal_args", FI_PARAM_STRING,
                  "Extra DPDK EAL arguments, blank-separated (default: -l 0 --no-pci, memory chosen "
                  "by ndnic: hugepages if free, else --no-huge).");
  fi_param_define(&g_prov, "mtu", FI_PARAM_INT,
                  "RoCE path MTU offered to peers: 256, 512, 1024, 2048, 4096 (default: 1024).");
  fi_param_define(&g_prov, "lcore", FI_PARAM_INT,
                  "A worker lcore that runs the engine (automatic progress); unset: the application's "
                  "calls drive it (manual progress). It joins EAL's -l list unless FI_NDNIC_EAL_ARGS gives one.");
  // The IB CM carries the count in the REQ and REP: each side names how often the other may
  // retry a send that found no receive posted here (Linux's rdma_cm always asks for 7).
  fi_param_define(&g_prov, "rnr_retry", FI_PARAM_INT,
                  "How many times a peer retries a message that finds no receive posted here before "
                  "its send fails (FI_ENORX): 0 .. 6, or 7 (the default): retry without limit.");
}

Runtime* runtime() {
  std::lock_guard lk(g_mu);
  if (g_runtime || g_failed) return g_runtime;
  auto rt = std::make_unique<Runtime>();
  std::string why;
  if (!read_settings(&rt->settings, &why)) {  // the application may still fix its environment
    complain(why);
    return nullptr;
  }
  if (!start_eal(rt->settings, &why) || !bring_up(rt.get(), &why)) {
    complain(why);
    g_failed = true;
    return nullptr;
  }
  g_runtime = rt.release();
  return g_runtime;
}

void shutdown_runtime() {
  std::lock_guard lk(g_mu);
  if (!g_runtime) return;
  // A virtio_user port says goodbye on its vhost-user socket, whose server may have exited
  // already: that write must not kill the application (SIGPIPE) as it exits.
  struct sigaction ignore {}, old {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &old);
  g_runtime->agent->stop();
  g_runtime->agent.reset();
  g_runtime->dev.close();
  g_runtime->port.close();
  delete g_runtime;
  g_runtime = nullptr;
  glue::eal_cleanup();
  sigaction(SIGPIPE, &old, nullptr);
}

}  // namespace ndnic::fabric
