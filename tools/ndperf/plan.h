// What one test runs, as the client tells the server in the private data of each connection
// request (the IB CM REQ carries 56 bytes of it): the test, its sizes, its QPs and depth, the
// MTU, and where it stands in the run. Both ends derive everything else from it the same way
// (the size list, the receive depth, how many windows), so nothing else needs negotiating.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "ndnic/ndspi.h"
#include "tools/ndperf/catalog.h"
#include "tools/ndperf/options.h"

namespace ndnic::ndperf {

struct Plan {
  Test test = Test::kCount;   ///< kCount: the client stopped early, no more tests
  uint8_t index = 0;          ///< this test among those the server serves
  uint8_t count = 0;          ///< how many the server serves in this run
  uint16_t qp = 0;            ///< which of the test's (or its group's) QPs this request is for
  uint16_t qps = 1;           ///< the test's QPs; in a group's plan, the group's
  /// Bandwidth tests over several application threads per node: group `group` of `groups`
  /// runs QPs first_qp.. of the test, on its own connections (listen port + group), its own
  /// CQ and worker. One group: the whole test on one thread.
  uint16_t first_qp = 0;
  uint8_t group = 0;
  uint8_t groups = 1;
  uint16_t depth = kDefaultTxDepth;
  uint16_t mtu = kDefaultMtu;
  uint32_t first_size = 0;    ///< sizes: first_size, doubling, up to last_size
  uint32_t last_size = 0;
};

/// The plan for `test` under these options (qp 0), in `groups` groups where the test can be
/// split (send_bw, write_bw, read_bw; never more groups than QPs).
Plan make_plan(Test test, const Options& o, uint8_t index, uint8_t count, uint32_t groups = 1);
/// Group g's share of a split plan: its QPs (the test's, dealt out evenly) and their first.
Plan group_plan(const Plan& whole, uint32_t g);
/// The bytes of the recv and send areas each group of a split plan has to itself.
size_t group_slice(const Plan& p);
/// Its message sizes, in order.
std::vector<uint32_t> sizes(const Plan& p);
/// The sizes a test would run under these options (for the client's loops and the buffers).
std::vector<uint32_t> sizes(Test test, const Options& o);
/// Iterations per size (per QP for bandwidth) when -n was not given: perftest's 5000 and
/// 1000, fewer for large messages so a size takes a fraction of a second on a software NIC.
uint64_t default_iters(Test test, uint32_t size);

std::vector<uint8_t> encode(const Plan& p);
/// Magic number and version first: a stranger's (or another version's) request is refused.
std::optional<Plan> decode_plan(const uint8_t* data, size_t len);

// ---- derived on both ends -------------------------------------------------------------------

/// QPs the test uses: latency tests and the baselines run one.
uint32_t test_qps(const Plan& p);
/// send_bw: receives the server keeps posted per QP (the client's initial credits).
uint32_t send_bw_receives(const Plan& p);
/// sendinv: windows (cycles in flight) per QP.
uint32_t sendinv_windows(const Plan& p);
/// Every request of a bandwidth test is signaled this often (and the last of a run always):
/// completions are in order per QP, so one result retires the ones before it.
uint32_t signal_every(uint32_t depth);

// ---- the registered buffer of each end ----------------------------------------------------
//
//   [recv area][send area][control area]
//
// recv area: where data lands (the peer's Sends and Writes, our Reads, our atomics' results,
// sendinv's windows) and what the peer Reads from; send area: what we Send and Write from;
// control area: per QP, 64-byte slots for control messages in and out.
struct Layout {
  size_t area = 0;  ///< bytes of the recv area and of the send area
  size_t total() const { return 2 * area + kControlBytes; }
  size_t recv() const { return 0; }
  size_t send() const { return area; }
  size_t control_in(uint32_t qp, uint32_t slot) const { return 2 * area + qp * kPerQp + slot * kSlot; }
  size_t control_out(uint32_t qp, uint32_t slot) const { return 2 * area + qp * kPerQp + kPerQp / 2 + slot * kSlot; }

  static constexpr size_t kSlot = 64;                    ///< bytes per control slot
  static constexpr uint32_t kSlotsPerQp = 128;           ///< in each direction
  static constexpr size_t kPerQp = 2 * kSlotsPerQp * kSlot;
  static constexpr size_t kControlBytes = kMaxQps * kPerQp;
};
/// The layout for everything these options can run (the largest test decides).
Layout layout_for(const Options& o);

// ---- messages after the connection ---------------------------------------------------------

/// The server's first message on each QP (and the client's on QP 0 for write_lat): the window
/// the peer may use and the receive depth (the initial credits of send_bw).
struct Setup {
  ND_MW_DESCRIPTOR window{};  ///< as Bind returned it (network order); zero when none
  uint32_t receives = 0;
};
constexpr size_t kSetupLen = 32;
void encode(const Setup& s, uint8_t* out);
std::optional<Setup> decode_setup(const uint8_t* data, size_t len);

}  // namespace ndnic::ndperf
