// A TwoNodes fixture for hostile peers: frames built with wire/ and sent into B's real port from
// A's, as if from A's QP (or anyone's), and a second, untouched QP pair that must keep working.
#pragma once

#include <functional>
#include <vector>

#include "tests/fixtures/two_nodes.h"
#include "ndnic/wire/packet.h"

namespace ndnic::nic::testing {

/// A frame from `from`'s port to `to`'s (UDP source port 0xC000): addresses, opcode, destination
/// QP and PSN filled in.
wire::RocePacket frame_between(const Node& from, const Node& to, uint8_t opcode, uint32_t dest_qp, uint32_t psn);

class Hostile : public TwoNodes {
 protected:
  /// A request from A's port to B's QP `dest_qp`: addresses, UDP port, AckReq filled in.
  wire::RocePacket request(uint8_t opcode, uint32_t dest_qp, uint32_t psn) const;
  /// Encodes `p` with `payload` (ICRC and all), lets `mutate` damage the frame, sends it from
  /// A's port and polls a little so that B processes it (and answers).
  void inject(wire::RocePacket p, const std::vector<uint8_t>& payload = {},
              const std::function<void(std::vector<uint8_t>&)>& mutate = nullptr, bool settle = true);
  /// A WRITE ONLY of `len` bytes of 0xEE into B's QP.
  void inject_write(uint32_t dest_qp, uint32_t psn, uint32_t rkey, uint64_t va, uint32_t len,
                    const std::function<void(std::vector<uint8_t>&)>& mutate = nullptr,
                    uint32_t src_ip = 0);

  /// B binds window `mw` (by its current key) over [va, va+len) of its buffer for its QP with
  /// `access`; returns the new key (0 on failure).
  uint32_t bind_on_b(uint32_t mw, uint64_t va, uint64_t len, uint32_t access);
  /// B invalidates `key` through its QP; returns the completion status.
  WcStatus local_inv_on_b(uint32_t key);

  /// Takes `x` (on A) and `y` (on B) through INIT, RTR and RTS to each other, both starting at `psn`.
  void connect_pair(Qp* x, Qp* y, uint32_t psn);
  /// A second QP pair on the same devices, nothing hostile sent to it.
  void make_good_pair();
  /// SEND + receive of 64 bytes on the good pair (into kGoodArea of B's buffer).
  void check_good_pair_works(uint32_t round);

  static constexpr uint64_t kGoodArea = 900 * 1024;
  Qp* good_a = nullptr;
  Qp* good_b = nullptr;
  Cq* good_scq = nullptr;
  Cq* good_rcq = nullptr;
};

}  // namespace ndnic::nic::testing
