// stats_text(): the telemetry counters as a table for a person at the end of a run. Same
// names as the JSON fields, so what one reads here can be looked up there.
#include <rte_cycles.h>
#include <rte_ether.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "telemetry/fields.h"
#include "ndnic/telemetry.h"

namespace ndnic::telemetry {
namespace {

using Row = std::vector<std::string>;

/// Columns two spaces apart: the first `left` aligned left (names), the rest right (numbers).
std::string table(const std::vector<Row>& rows, size_t left) {
  std::vector<size_t> width;
  for (const Row& r : rows) {
    if (width.size() < r.size()) width.resize(r.size(), 0);
    for (size_t i = 0; i < r.size(); i++) width[i] = std::max(width[i], r[i].size());
  }
  std::string out;
  for (const Row& r : rows) {
    std::string line = "  ";
    for (size_t i = 0; i < r.size(); i++) {
      const std::string pad(width[i] - r[i].size(), ' ');
      line += i < left ? r[i] + pad : pad + r[i];
      if (i + 1 < r.size()) line += "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

/// "3 (not_our_mac 2, vlan 1)": the total, then the reasons that are not zero.
std::string by_reason(const std::vector<Field>& reasons) {
  uint64_t total = 0;
  std::string list;
  for (const auto& [name, n] : reasons) {
    if (n == 0) continue;
    total += n;
    list += std::string(list.empty() ? "" : ", ") + name + " " + std::to_string(n);
  }
  std::string out = std::to_string(total);
  if (!list.empty()) out += std::string(" (") + list + ")";
  return out;
}

/// "0/1/0/0": several counters in one column (the four NAK kinds), and their names.
std::string slashed(const std::vector<Field>& fields) {
  std::string s;
  for (const auto& f : fields) s += (s.empty() ? std::string() : std::string("/")) + std::to_string(f.second);
  return s;
}

std::string slashed_names(const std::vector<Field>& fields) {
  std::string s;
  for (const auto& f : fields) s += (s.empty() ? std::string() : std::string("/")) + f.first;
  return s;
}

Row qp_row(std::string qpn, std::string type, std::string state, const nic::QpCounters& c) {
  Row r{std::move(qpn), std::move(type), std::move(state)};
  for (const auto& f : qp_fields(c)) r.push_back(std::to_string(f.second));
  r.push_back(slashed(qp_naks(c.naks_sent)));
  r.push_back(slashed(qp_naks(c.naks_received)));
  r.push_back(slashed(qp_drops(c)));
  return r;
}

}  // namespace

std::string stats_text(const nic::Device& dev, const glue::Port& port) {
  const glue::PortCounters pc = port.counters();
  const nic::Device::Counters dc = dev.counters();
  const nic::QpCounters totals = dev.qp_totals();
  struct QpLine {
    nic::QpType type;
    nic::QpState state;
    nic::QpCounters c;
  };
  std::map<uint32_t, QpLine> qps;  // by number
  dev.for_each_qp([&](const nic::Qp& qp) { qps[qp.qpn()] = {qp.type(), qp.state(), qp.counters()}; });

  char mac[RTE_ETHER_ADDR_FMT_SIZE];
  rte_ether_format_addr(mac, sizeof(mac), &port.mac());
  std::string out = std::string("port ") + std::to_string(port.port_id()) + " (" + port.driver() + "), " +
                    ipv4_text(port.ipv4()) + ", " + mac + "\n";
  out += table({{"", "packets", "bytes"},
                 {"rx", std::to_string(pc.rx_frames), std::to_string(pc.rx_bytes)},
                 {"tx", std::to_string(pc.tx_frames), std::to_string(pc.tx_bytes)}},
                1);
  out += std::string("  rx_roce ") + std::to_string(pc.rx_roce) + ", rx_arp " + std::to_string(pc.rx_arp) +
         ", tx_arp_requests " + std::to_string(pc.tx_arp_requests) + ", tx_arp_replies " +
         std::to_string(pc.tx_arp_replies) + ", tx_errors " + std::to_string(pc.tx_errors) +
         ", capture_errors " + std::to_string(pc.capture_errors) + "\n";
  out += std::string("  drops ") + by_reason(port_drops(pc)) + "\n";
  out += std::string("engine: rejects ") + by_reason(engine_rejects(dc)) + ", unknown_qp " + std::to_string(dc.unknown_qp) +
         ", dispatched " + std::to_string(dc.dispatched) + ", dispatch_dropped " +
         std::to_string(dc.dispatch_dropped) + ", tx_dropped " + std::to_string(dc.tx_dropped) + "\n";
  const double hz = double(rte_get_tsc_hz());
  auto percent = [](uint64_t part, uint64_t whole) { return whole ? 100.0 * double(part) / double(whole) : 0.0; };
  for (const nic::Device::ShardLoad& l : dev.shard_loads()) {
    char line[300];
    const double per_burst = l.rx_bursts ? double(l.rx_frames) / double(l.rx_bursts) : 0.0;
    if (l.app_driven) {
      // The thread's turns at the engine: its looks (progress) and its posts sent at once.
      std::snprintf(line, sizeof line,
                    "shard %u, run to completion: progress %.3f s, %.1f%% of it in the %.1f%% of %llu loops that "
                    "found work; posts sent at once %.3f s over %llu calls; %.1f frames per RX burst\n",
                    l.lcore, double(l.cycles) / hz, percent(l.busy_cycles, l.cycles), percent(l.busy_polls, l.polls),
                    (unsigned long long)l.polls, double(l.post_cycles) / hz, (unsigned long long)l.post_turns,
                    per_burst);
    } else {
      std::snprintf(line, sizeof line,
                    "worker lcore %u: busy %.1f%% of %.3f s; %.1f%% of %llu loops found work; %.1f frames per RX burst\n",
                    l.lcore, percent(l.busy_cycles, l.cycles), double(l.cycles) / hz, percent(l.busy_polls, l.polls),
                    (unsigned long long)l.polls, per_burst);
    }
    out += line;
  }

  std::vector<Row> rows;
  Row head{"qp", "type", "state"};
  for (const auto& f : qp_fields(totals)) head.push_back(f.first);
  head.insert(head.end(), {"naks_sent", "naks_received", "drops"});
  rows.push_back(std::move(head));
  for (const auto& [qpn, q] : qps)
    rows.push_back(qp_row(std::to_string(qpn), q.type == nic::QpType::kRc ? "RC" : "UD",
                          nic::qp_state_name(q.state), q.c));
  rows.push_back(qp_row("all", "", "", totals));
  out += std::string("queue pairs: ") + std::to_string(qps.size()) + " (\"all\" includes destroyed ones)\n";
  out += table(rows, 3);
  out += std::string("  naks: ") + slashed_names(qp_naks(totals.naks_sent)) + "; drops: " +
         slashed_names(qp_drops(totals)) + "\n";
  return out;
}

}  // namespace ndnic::telemetry
