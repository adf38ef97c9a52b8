// Runs tshark (Wireshark) over a pcap and returns the fields it decoded, one row per frame.
// Wireshark's InfiniBand dissector was written independently of ndnic, so agreeing with it is
// evidence that the codec follows the specification and not just itself.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace ndnic::test {

/// Field name -> the first value tshark printed for it; a field tshark did not show is absent.
using TsharkRow = std::map<std::string, std::string>;

/// tshark's path: $NDNIC_TSHARK when set (meson passes what it found), else "tshark" from
/// PATH. Empty when there is none.
std::string find_tshark();

/// Runs `tshark -r pcap --disable-heuristic rpcrdma_infiniband -T fields` with `fields` and
/// returns one row per frame in file order. False with *error set when tshark fails.
bool run_tshark_fields(const std::string& tshark, const std::string& pcap,
                       const std::vector<std::string>& fields, std::vector<TsharkRow>* rows,
                       std::string* error);

}  // namespace ndnic::test
