// What Wireshark must show for a RoCEv2 frame, derived from the RocePacket ndnic encoded or
// decoded. Shared by the encoder test and the golden-capture test so both compare the same
// fields the same way.
#pragma once

#include <string>
#include <vector>

#include "tests/tshark/tshark_runner.h"
#include "ndnic/wire/packet.h"

namespace ndnic::test {

/// Every field the comparison reads (frame.number first); pass it to run_tshark_fields.
const std::vector<std::string>& tshark_roce_fields();

/// How `row` (tshark's view of one frame) differs from `p`, one line per difference; empty
/// when they agree. A field of a header `p` does not carry must be absent from the row, and a
/// malformed-packet marker is always a difference.
std::vector<std::string> tshark_mismatches(const wire::RocePacket& p, const TsharkRow& row);

/// True when tshark did not take the frame for InfiniBand (no BTH opcode shown).
bool tshark_saw_no_roce(const TsharkRow& row);

}  // namespace ndnic::test
