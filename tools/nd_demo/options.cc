#include "tools/nd_demo/options.h"

#include <cstdio>

#include "tools/nd_app/arguments.h"

namespace ndnic::nd_demo {
namespace {

constexpr unsigned long kMaxWaitS = 3600;

constexpr const char* kUsage =
    "Usage:\n"
    "  nd_demo [EAL args]                                      both sides here (net_ring pair)\n"
    "  nd_demo [EAL args] -- --role=passive --dev=DEV --ip=A.B.C.D [--wait=S] [--capture=FILE]\n"
    "  nd_demo [EAL args] -- --role=active --dev=DEV --ip=A.B.C.D --peer=A.B.C.D [--wait=S]\n"
    "                        [--capture=FILE]\n"
    "\n"
    "The mission over the ND v1 API: the owner binds a memory window and sends its descriptor;\n"
    "the peer RDMA WRITEs and READs through it and SendAndInvalidate-s it; the owner sees the\n"
    "window's invalidate result, then the receive; a WRITE through the old token is refused; the\n"
    "window, bound again, works. Each step prints ok or FAIL; the exit status is 0 only when all\n"
    "did what they should.\n"
    "\n"
    "      --role=ROLE      passive: the owner (listens on port 5791); active: the peer (connects)\n"
    "      --dev=DEVARGS    the DPDK port: an ethdev port or a vdev (net_af_packet0,iface=eth0)\n"
    "      --ip=A.B.C.D     this side's IPv4 address on it (ndnic answers ARP for it)\n"
    "      --peer=A.B.C.D   active: the passive side's address\n"
    "      --wait=S         how long one side waits for the other to start (default 60)\n"
    "      --capture=FILE   write the port's frames to a pcap file\n"
    "  -h, --help           this text\n";

Parsed usage_error(const std::string& what) { return nd_app::usage_error<Options>("nd_demo", what); }

}  // namespace

Parsed parse_options(const std::vector<std::string>& args) {
  Options o;
  bool role = false, wait = false, capture = false;
  for (size_t i = 0; i < args.size(); i++) {
    std::string name = args[i], value;
    bool has_value = false;
    if (const size_t eq = name.find('='); name.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
      has_value = true;
    }
    if (name == "-h" || name == "--help") {
      std::fputs(kUsage, stdout);
      return Parsed{std::nullopt, 0};
    }
    if (name != "--role" && name != "--dev" && name != "--ip" && name != "--peer" && name != "--wait" &&
        name != "--capture")
      return usage_error("unknown argument '" + args[i] + "'");
    if (!has_value) {
      if (i + 1 >= args.size()) return usage_error(name + " needs a value");
      value = args[++i];
    }
    if (name == "--role") {
      if (value == "passive") {
        o.role = Role::kPassive;
      } else if (value == "active") {
        o.role = Role::kActive;
      } else {
        return usage_error("--role " + value + ": passive or active");
      }
      role = true;
    } else if (name == "--dev") {
      if (value.empty()) return usage_error("--dev needs a device");
      o.device = value;
    } else if (name == "--ip" || name == "--peer") {
      if (!nd_app::parse_ipv4(value.c_str(), name == "--ip" ? &o.ipv4 : &o.peer_ipv4))
        return usage_error(name + " " + value + ": not an IPv4 address");
    } else if (name == "--wait") {
      unsigned long s = 0;
      if (!nd_app::parse_uint(value.c_str(), kMaxWaitS, &s) || s == 0)
        return usage_error("--wait " + value + ": seconds, 1 to " + std::to_string(kMaxWaitS));
      o.wait_s = unsigned(s);
      wait = true;
    } else {
      if (value.empty()) return usage_error("--capture needs a file name");
      o.capture = value;
      capture = true;
    }
  }
  if (!role) {
    if (!o.device.empty() || o.ipv4 || o.peer_ipv4 || wait || capture)
      return usage_error("--dev, --ip, --peer, --wait and --capture go with --role (both sides here use a net_ring pair)");
    return Parsed{o, 0};
  }
  if (o.device.empty() || !o.ipv4) return usage_error("--role needs --dev and --ip (this side's port and address)");
  if (o.role == Role::kActive && !o.peer_ipv4) return usage_error("--role=active needs --peer (the passive side)");
  if (o.role == Role::kPassive && o.peer_ipv4) return usage_error("--peer goes with --role=active");
  if (o.peer_ipv4 == o.ipv4) return usage_error("--peer must be another address than --ip");
  return Parsed{o, 0};
}

}  // namespace ndnic::nd_demo
