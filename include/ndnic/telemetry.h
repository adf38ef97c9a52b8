// ndnic's counters for people and scripts: DPDK telemetry commands under /ndnic/ (read with
// dpdk-telemetry.py or any client of the v2 socket while the program runs) and a text table
// of the same counters (ndperf --stats).
//
// Commands (JSON dictionaries with named fields; a bad or unknown argument answers null):
//   /ndnic/devices                    registered devices: name -> port, driver, MAC, IPv4, QPs
//   /ndnic/port_stats,<dev>           the port: packets and bytes each way, ARP, drops by reason
//   /ndnic/device_stats,<dev>         the engine: decoder rejects by reason, frames for no QP,
//                                     dispatch and TX drops, and every QP's counters summed
//                                     (destroyed QPs included)
//   /ndnic/qps,<dev>                  the QP numbers that exist (the first 512)
//   /ndnic/qp_stats,<dev>:<qpn>       one QP: type, state, packets and bytes each way,
//                                     retransmissions, timeouts, NAKs by kind, RNR NAKs,
//                                     duplicates, out of sequence, invalidations, drops
//
// Telemetry needs EAL's telemetry thread: not with --no-telemetry (which wins over
// --telemetry whatever their order), and it serves a socket in EAL's runtime directory,
// <run>/dpdk/<file-prefix>/dpdk_telemetry.v2 (<run> is /var/run for root). It works with
// --in-memory: every such process shares the prefix "rte", and the second one on a machine
// gets dpdk_telemetry.v2:1 (dpdk-telemetry.py -i 1), and so on; a --file-prefix of one's own
// gives a socket of one's own (dpdk-telemetry.py -f NAME). socket_path() says which.
#pragma once

#include <string>

namespace ndnic::glue {
class Port;
}
namespace ndnic::nic {
class Device;
}

namespace ndnic::telemetry {

/// Makes a device readable through the /ndnic/ commands under `name` (letters, digits and
/// '_', at most 63: the name is also a JSON key). Register after the device and port are
/// open, unregister before either closes. The commands read the counters from the telemetry
/// thread while the lcores run: no lock on the datapath, so values may lag a few packets.
/// False for a bad or taken name, null pointers, or commands DPDK refused.
bool register_device(const std::string& name, nic::Device* dev, glue::Port* port);
/// Forgets a device; returns once no command is reading it any more. Unknown names are fine.
void unregister_device(const std::string& name);

/// The counters of a device and its port as a human-readable table (a few dozen lines).
/// Any thread may call it; exact once the lcores are quiet.
std::string stats_text(const nic::Device& dev, const glue::Port& port);

/// This process's telemetry socket (<runtime dir>/dpdk_telemetry.v2[:N]); empty when EAL
/// runs without telemetry.
std::string socket_path();

}  // namespace ndnic::telemetry
