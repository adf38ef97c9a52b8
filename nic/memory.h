// Memory regions and type-2 memory windows, and the key checks the responder and the
// requester make against them.
//
// Keys are (index << 8) | key byte. The key byte changes on every registration of a slot and
// every bind of a window (by a random step, and slots are handed out in a random order, so a
// peer cannot guess a live key from one it saw), so a stale key never matches. Regions are
// written by the application thread (register/deregister, serialised by a control-path mutex
// so that several application threads may register at once) and read by lcores; windows are
// changed by lcores (bind, invalidate) through an atomic state word, so no lock is taken on the
// datapath.
//
// A type-2 window is bound to one QP instance (`qp_id`, unique for the device's lifetime, never
// a reused QP number): only that QP may access or invalidate it, and destroying the QP
// invalidates what is bound to it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "ndnic/verbs.h"
#include "nic/grace_period.h"

namespace ndnic::nic {

constexpr uint32_t kKeyIndexShift = 8;
constexpr uint32_t kKeyByteMask = 0xff;
constexpr uint32_t kMwKeyBase = 0x800000;  ///< window indexes start here, so MR and MW keys never collide
constexpr uint64_t kPinWaitNs = 2'000'000'000;  ///< deregistration's wait for frames in flight

inline uint32_t key_index(uint32_t key) { return key >> kKeyIndexShift; }
inline uint8_t key_byte(uint32_t key) { return uint8_t(key & kKeyByteMask); }
inline uint32_t make_key(uint32_t index, uint8_t byte) { return index << kKeyIndexShift | byte; }
inline bool is_mw_key(uint32_t key) { return key_index(key) >= kMwKeyBase; }
/// A key byte other than `a` and `b` (the same byte or two), each allowed one equally likely
/// for a uniform `random`.
inline uint8_t key_byte_avoiding(uint8_t a, uint8_t b, uint32_t random) {
  if (a == b) return uint8_t(a + 1 + random % 255);
  const uint8_t step = uint8_t(random % 254);      // among the 254 bytes left, counted from a + 1
  const uint8_t b_step = uint8_t(b - a - 1);       // where b is in that count: 0..254
  return uint8_t(a + 1 + step + (step >= b_step)); // past b, one further
}
/// key_byte_avoiding() with unpredictable bits (getrandom): a peer that saw one key must not be
/// able to compute the next.
uint8_t random_key_byte(uint8_t a, uint8_t b);

/// Outcome of a key check, mapped by callers to a NAK or a completion status.
enum class KeyCheck : uint8_t {
  kOk,
  kBadKey,        ///< no such region/window, or a stale key byte
  kBadPd,         ///< the key belongs to another protection domain
  kBadQp,         ///< a type-2 window bound to another QP
  kNoAccess,      ///< the rights do not include the operation
  kOutOfRange,    ///< [va, va+len) is not inside the region/window
  kInvalidated,   ///< a window that was invalidated (and not bound again)
};
const char* key_check_name(KeyCheck k);

/// How a bind or invalidate names its window: by the key it has now (verbs: the R_Key the
/// consumer was given), or by its handle, the key alloc_mw returned, which never changes (the
/// ND frontend: a bind that fails or is flushed leaves the window's key as it was, and the
/// frontend still names the right window).
enum class MwName : uint8_t { kCurrentKey, kHandle };

/// A region's frames in flight that carry its bytes where they lie (zero-copy transmit). The
/// sending lcore counts each frame it attaches; whoever frees the frame (the peer's lcore over
/// a ring, the PMD once the kernel has the bytes) counts it released. Deregistration waits
/// until the two agree. Each count on a line of its own, which one side alone writes.
struct TxPins {
  alignas(64) std::atomic<uint64_t> attached{0};
  alignas(64) std::atomic<uint64_t> released{0};
};

/// What a successful check resolves to: host address for the first byte.
struct Resolved {
  uint8_t* host = nullptr;
  /// check_local: the region's, for a frame that attaches its bytes. A remote access never
  /// hands them out: a READ response is copied, so that it holds the bytes as the READ found them.
  TxPins* pins = nullptr;
  /// check_remote: what its verdict rests on, for the packets that go on with the access
  /// (remote_access_stands): a window's state word as checked, a region's registration.
  uint64_t standing = 0;
};

class MemoryTable {
 public:
  MemoryTable();
  ~MemoryTable();

  /// Sizes the tables. `grace` is over the RCU variable the shards report quiescent states on
  /// (none in single-threaded use); deregistration waits for a grace period before reusing a slot.
  bool init(uint32_t max_mrs, uint32_t max_mws, GracePeriod grace);

  // ---- application thread ---------------------------------------------------------------
  /// New region over [addr, addr+len) with Access rights. lkey == rkey. False when full or
  /// when len is 0 or the range wraps.
  bool register_mr(uint32_t pd, const void* addr, uint64_t len, uint32_t access, uint32_t* key);
  /// Removes the region; its key fails at once. False for an unknown key or one with
  /// bound windows. Returns once no lcore uses the key and no frame in flight carries the
  /// region's bytes (TxPins), or after kPinWaitNs with frames still out (counted in
  /// pinned_at_deregister: a peer that stopped taking frames holds them for good).
  bool deregister_mr(uint32_t key);
  /// Deregistrations that gave up waiting for frames in flight.
  uint64_t pinned_at_deregister() const;
  /// New window in `pd`, unbound; returns its key, which is also its handle (0 if full).
  /// `context` is reported with the window's remote-invalidate completion.
  uint32_t alloc_mw(uint32_t pd, uint64_t context);
  /// Frees the window named by its handle or its current key; a bound window's region is
  /// released.
  bool dealloc_mw(uint32_t key);
  /// The key window `handle` has now (the engine's: a bind posted but not yet run has not
  /// changed it); 0 when no window is allocated under `handle`.
  uint32_t window_key(uint32_t handle) const;
  /// QP `qp_id` is gone: every window bound to it is invalidated (no completion). Returns how
  /// many were.
  unsigned invalidate_bound_to(uint32_t qp_id);

  // ---- lcores -----------------------------------------------------------------------------
  /// A local SGE: lkey names a region of `pd` with local access; [addr, addr+len) inside it.
  /// `need_local_write` for receive buffers and READ/atomic sinks.
  KeyCheck check_local(uint32_t pd, uint32_t lkey, uint64_t addr, uint64_t len,
                       bool need_local_write, Resolved* out) const;
  /// A remote access through an R_Key: region or window of `pd`, a window bound to QP
  /// instance `qp_id`, `access` (kAccessRemoteRead / Write / Atomic) granted, [va, va+len)
  /// inside.
  KeyCheck check_remote(uint32_t pd, uint32_t qp_id, uint32_t rkey, uint64_t va, uint64_t len,
                        uint32_t access, Resolved* out) const;
  /// Whether an access check_remote passed (as `standing`, from its Resolved) still holds for
  /// bytes inside the range it checked: the same registration of the region still under
  /// `rkey` (its fields do not change while its key is published; a key byte comes round
  /// again after two registrations of a slot, so the registration is compared, not the key),
  /// or the window's state word unchanged (its generation moves on every transition, so the
  /// same binding). What a WRITE's MIDDLE and LAST and a READ's later responses ask instead of
  /// the whole check: the owner may have invalidated the window or deregistered the region
  /// since the first packet.
  bool remote_access_stands(uint32_t rkey, uint64_t standing) const;
  /// Moves on as each deregistration starts (after the key is cleared, before the grace
  /// period). A check_local that passed after the epoch was read still holds while the same
  /// epoch is read again, up to the reader's next quiescent state: a deregistration that began
  /// since is still waiting for that state, so the bytes are still the region's.
  uint64_t region_epoch() const { return region_epoch_.load(std::memory_order_acquire); }

  /// Binds window `mw_key` (of `pd`, named as `name` says) to [addr, addr+len) of region
  /// `mr_key` for QP instance `qp_id` with `access`; the window's new key gets key byte
  /// `new_key_byte`. The region must allow kAccessMwBind and contain the range; `access` must
  /// be a non-empty subset of remote read/write/atomic (write and atomic need the region's
  /// local write). Returns kOk and the new key.
  KeyCheck bind_mw(uint32_t pd, uint32_t qp_id, uint32_t mw_key, uint32_t mr_key, uint64_t addr,
                   uint64_t len, uint32_t access, uint8_t new_key_byte, uint32_t* new_key,
                   MwName name = MwName::kCurrentKey);
  /// Invalidates window `key` of `pd` through QP instance `qp_id` (local invalidate, or the
  /// remote-invalidate handler): a type-2 window only through the QP it is bound to (kBadQp
  /// otherwise). Fails with kBadKey for a stale/unknown key, kInvalidated when already invalid.
  /// On success, `context` receives the window's context.
  KeyCheck invalidate_mw(uint32_t pd, uint32_t qp_id, uint32_t key, uint64_t* context,
                         MwName name = MwName::kCurrentKey);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
  /// Read by every lcore per packet, written only by deregistration: a line of its own.
  alignas(64) std::atomic<uint64_t> region_epoch_{0};
};

}  // namespace ndnic::nic
