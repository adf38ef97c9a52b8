// The /ndnic/ telemetry commands. DPDK runs them on its telemetry thread, which is no lcore:
// they read counters that lcores write with plain stores (values may lag a few packets) and
// enumerate QPs through Device::for_each_qp, which holds the device's QP-list lock.
#include "ndnic/telemetry.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string_view>

#include <rte_eal.h>
#include <rte_ether.h>
#include <rte_telemetry.h>

#include "telemetry/fields.h"

namespace ndnic::telemetry {
namespace {

constexpr size_t kMaxName = 63;  ///< well within telemetry's keys (127) and command lines
constexpr const char* kSocketName = "dpdk_telemetry.v2";

struct Entry {
  nic::Device* dev;
  glue::Port* port;
};

// Commands cannot be unregistered from DPDK, so they are registered once and look devices up
// here. A command holds the lock while it reads, so unregister_device() waits for it. Never
// destroyed: the telemetry thread may still answer a command while static destructors run.
struct Registry {
  std::mutex mutex;
  std::map<std::string, Entry, std::less<>> devices;
  bool commands = false;
};

Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

bool valid_name(const std::string& name) {
  if (name.empty() || name.size() > kMaxName) return false;
  for (unsigned char ch : name)
    if (!std::isalnum(ch) && ch != '_') return false;
  return true;
}

/// The device named by `params` (the text after the command's comma).
const Entry* find(const Registry& r, std::string_view params) {
  const auto it = r.devices.find(params);
  return it == r.devices.end() ? nullptr : &it->second;
}

void add_fields(rte_tel_data* d, const std::vector<Field>& fields) {
  for (const auto& [name, value] : fields) rte_tel_data_add_dict_u64(d, name, value);
}

/// A nested dictionary `name` of `fields`.
void add_dict(rte_tel_data* d, const char* name, const std::vector<Field>& fields) {
  rte_tel_data* sub = rte_tel_data_alloc();
  if (sub == nullptr) return;
  rte_tel_data_start_dict(sub);
  add_fields(sub, fields);
  if (rte_tel_data_add_dict_container(d, name, sub, 0) != 0) rte_tel_data_free(sub);
}

void add_qp_counters(rte_tel_data* d, const nic::QpCounters& c) {
  add_fields(d, qp_fields(c));
  add_dict(d, "naks_sent", qp_naks(c.naks_sent));
  add_dict(d, "naks_received", qp_naks(c.naks_received));
  add_dict(d, "drops", qp_drops(c));
}

size_t live_qps(const nic::Device& dev) {
  size_t n = 0;
  dev.for_each_qp([&](const nic::Qp&) { n++; });
  return n;
}

int cmd_devices(const char*, const char*, rte_tel_data* d) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  rte_tel_data_start_dict(d);
  for (const auto& [name, e] : r.devices) {
    rte_tel_data* sub = rte_tel_data_alloc();
    if (sub == nullptr) return -ENOMEM;
    rte_tel_data_start_dict(sub);
    char mac[RTE_ETHER_ADDR_FMT_SIZE];
    rte_ether_format_addr(mac, sizeof(mac), &e.port->mac());
    rte_tel_data_add_dict_u64(sub, "port_id", e.port->port_id());
    rte_tel_data_add_dict_string(sub, "driver", e.port->driver().c_str());
    rte_tel_data_add_dict_string(sub, "mac", mac);
    rte_tel_data_add_dict_string(sub, "ipv4", ipv4_text(e.port->ipv4()).c_str());
    rte_tel_data_add_dict_u64(sub, "qps", live_qps(*e.dev));
    if (rte_tel_data_add_dict_container(d, name.c_str(), sub, 0) != 0) rte_tel_data_free(sub);
  }
  return 0;
}

int cmd_port_stats(const char*, const char* params, rte_tel_data* d) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  const Entry* e = find(r, params ? params : "");
  if (e == nullptr) return -EINVAL;
  const glue::PortCounters c = e->port->counters();
  rte_tel_data_start_dict(d);
  rte_tel_data_add_dict_string(d, "device", params);
  rte_tel_data_add_dict_u64(d, "port_id", e->port->port_id());
  add_fields(d, port_fields(c));
  add_dict(d, "drops", port_drops(c));
  return 0;
}

int cmd_device_stats(const char*, const char* params, rte_tel_data* d) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  const Entry* e = find(r, params ? params : "");
  if (e == nullptr) return -EINVAL;
  const nic::Device::Counters c = e->dev->counters();
  rte_tel_data_start_dict(d);
  rte_tel_data_add_dict_string(d, "device", params);
  rte_tel_data_add_dict_u64(d, "qps", live_qps(*e->dev));
  add_fields(d, engine_fields(c));
  add_dict(d, "rejects", engine_rejects(c));
  add_qp_counters(d, e->dev->qp_totals());
  return 0;
}

int cmd_qps(const char*, const char* params, rte_tel_data* d) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  const Entry* e = find(r, params ? params : "");
  if (e == nullptr) return -EINVAL;
  std::set<uint32_t> qpns;  // in order, whatever order the device keeps them in
  e->dev->for_each_qp([&](const nic::Qp& qp) { qpns.insert(qp.qpn()); });
  rte_tel_data_start_array(d, RTE_TEL_U64_VAL);
  size_t n = 0;
  for (uint32_t q : qpns)
    if (n++ < RTE_TEL_MAX_ARRAY_ENTRIES) rte_tel_data_add_array_u64(d, q);
  return 0;
}

int cmd_qp_stats(const char*, const char* params, rte_tel_data* d) {
  const std::string_view p = params ? params : "";
  const size_t sep = p.find_last_of(":,");
  if (sep == std::string_view::npos) return -EINVAL;
  const std::string dev_name(p.substr(0, sep));
  const std::string num(p.substr(sep + 1));
  char* end = nullptr;
  const unsigned long qpn = std::strtoul(num.c_str(), &end, 0);  // decimal or 0x...
  if (num.empty() || *end != '\0') return -EINVAL;

  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  const Entry* e = find(r, dev_name);
  if (e == nullptr) return -EINVAL;
  bool found = false;
  nic::QpType type{};
  nic::QpState state{};
  nic::QpCounters c;
  e->dev->for_each_qp([&](const nic::Qp& qp) {
    if (qp.qpn() != qpn) return;
    found = true;
    type = qp.type();
    state = qp.state();
    c = qp.counters();
  });
  if (!found) return -EINVAL;
  rte_tel_data_start_dict(d);
  rte_tel_data_add_dict_string(d, "device", dev_name.c_str());
  rte_tel_data_add_dict_u64(d, "qpn", qpn);
  rte_tel_data_add_dict_string(d, "type", type == nic::QpType::kRc ? "RC" : "UD");
  rte_tel_data_add_dict_string(d, "state", nic::qp_state_name(state));
  add_qp_counters(d, c);
  return 0;
}

struct Command {
  const char* name;
  telemetry_cb fn;
  const char* help;
};

constexpr Command kCommands[] = {
    {"/ndnic/devices", cmd_devices, "Registered ndnic devices: port, driver, MAC, IPv4, QPs. No parameters."},
    {"/ndnic/port_stats", cmd_port_stats, "An ndnic port's packets, bytes, ARP and drops by reason. Parameter: device."},
    {"/ndnic/device_stats", cmd_device_stats,
     "An ndnic engine's drops by reason and all its QPs' counters summed. Parameter: device."},
    {"/ndnic/qps", cmd_qps, "The QP numbers of an ndnic device. Parameter: device."},
    {"/ndnic/qp_stats", cmd_qp_stats, "One ndnic QP's counters. Parameters: device:qpn."},
};

}  // namespace

bool register_device(const std::string& name, nic::Device* dev, glue::Port* port) {
  if (!valid_name(name) || dev == nullptr || port == nullptr) return false;
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  if (r.devices.count(name)) return false;
  if (!r.commands) {
    for (const Command& c : kCommands)
      if (rte_telemetry_register_cmd(c.name, c.fn, c.help) != 0) return false;
    r.commands = true;
  }
  r.devices.emplace(name, Entry{dev, port});
  return true;
}

void unregister_device(const std::string& name) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.devices.erase(name);
}

std::string socket_path() {
  // Several processes may serve sockets in one runtime directory (v2, v2:1, ...): ours is the
  // listening socket among our own file descriptors, which asks no other process anything.
  std::set<std::string> inodes;
  std::error_code ec;
  for (const auto& fd : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    const std::string link = std::filesystem::read_symlink(fd.path(), ec).string();
    if (!ec && link.starts_with("socket:[") && link.ends_with("]"))
      inodes.insert(link.substr(8, link.size() - 9));
  }
  const std::string prefix = std::string(rte_eal_get_runtime_dir()) + "/" + kSocketName;
  std::ifstream unix_sockets("/proc/self/net/unix");
  std::string line;
  std::getline(unix_sockets, line);  // the column names
  while (std::getline(unix_sockets, line)) {
    // Num RefCount Protocol Flags Type St Inode Path
    std::istringstream in(line);
    std::string field[7], path;
    for (std::string& f : field) in >> f;
    in >> path;
    if (inodes.count(field[6]) &&
        (path == prefix || (path.starts_with(prefix + ":") && path.size() > prefix.size() + 1)))
      return path;
  }
  return {};
}

}  // namespace ndnic::telemetry
