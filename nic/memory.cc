// Region and window tables. Regions: the application thread writes an entry while its key word
// is 0, publishes the key word last (release), and on deregistration clears the key word and
// waits for a QSBR grace period before the slot can be written again, so an lcore that saw a
// matching key reads stable fields. Windows: bind and invalidate run on lcores, so every
// change goes through a CAS on one state word, and readers validate their copy of the fields
// against that word (seqlock style) instead of waiting for anyone.
//
// Rules (IBTA vol. 1 ch. 10, as Linux rxe applies them in rxe_mr.c, rxe_mw.c, rxe_resp.c):
// - A zero-length READ/WRITE checks no key at all (C9-88; rxe check_rkey returns early, and
//   copy_data never looks up a zero-length SGE). Atomics are never zero-length.
// - A region with remote write or remote atomic needs local write (ib_check_mr_access).
// - A type-2 bind needs: the window in the QP's PD, unbound (o10-37.2.30: a bound window must
//   be invalidated first), a region of the same PD with MW_BIND (C10-73), a non-zero length
//   (o10-37.2.40), the range inside the region (C10-75), and local write on the region when the
//   window grants remote write or atomic (C10-74). rxe lets windows grant remote atomic
//   (RXE_ACCESS_SUPPORTED_MW includes it), so this table does too.
// - A window's remote access checks the window's own range and rights; a type-2 window is
//   usable only through the QP it was bound to (rxe_lookup_mw: mw->qp != qp fails).
// - A region cannot be deregistered while windows are bound to it (rxe_dereg_mr, num_mw).
#include <rte_pause.h>
#include <pthread.h>
#include <sys/random.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "nic/memory.h"

namespace ndnic::nic {
namespace {

constexpr uint32_t kRemoteRights = kAccessRemoteRead | kAccessRemoteWrite | kAccessRemoteAtomic;
constexpr uint32_t kRegionRights = kAccessLocalWrite | kRemoteRights | kAccessMwBind;
/// Rights that let a peer change memory, which IBTA only grants over locally writable memory.
constexpr uint32_t kWritingRights = kAccessRemoteWrite | kAccessRemoteAtomic;
constexpr uint32_t kMaxIndex = 1u << (32 - kKeyIndexShift);
constexpr uint32_t kMaxMws = kMaxIndex - kMwKeyBase;
constexpr int kRegionKeyShift = 32;
constexpr uint64_t kBoundCountMask = 0xffffffffull;

/// Forks so far: a child must not hand out the words its parent has left too.
std::atomic<unsigned> g_forks{0};
const int g_fork_hook = pthread_atfork(nullptr, nullptr, [] { g_forks.fetch_add(1, std::memory_order_relaxed); });

/// Unpredictable bits for key bytes and slot order: a peer that saw one key must not be able to
/// compute the next (RoCE has no other authentication than the keys). getrandom is a system
/// call (~1 us in a VM): one per ND Bind was ~9% of sendinv's client thread, so each thread
/// draws kRandomBatch words at once and hands them out one by one.
uint32_t random32() {
  constexpr unsigned kRandomBatch = 64;
  thread_local uint32_t pool[kRandomBatch];
  thread_local unsigned left = 0;
  thread_local unsigned drawn_at_fork = 0;
  const unsigned forks = g_forks.load(std::memory_order_relaxed);
  if (left == 0 || drawn_at_fork != forks) {
    drawn_at_fork = forks;
    if (getrandom(pool, sizeof pool, 0) != ssize_t(sizeof pool)) {
      static std::random_device fallback;
      return fallback();
    }
    left = kRandomBatch;
  }
  return pool[--left];
}

// A zero-length access touches no byte, but callers may still hand the address to memcpy,
// which must not get a null pointer.
uint8_t zero_length_sink;

/// Until every frame attached to a region's bytes is freed, or kPinWaitNs: false if frames
/// are still out then. The frees come from other threads (a peer's lcore, a PMD's TX).
bool wait_unpinned(const TxPins& pins) {
  const uint64_t attached = pins.attached.load(std::memory_order_acquire);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(kPinWaitNs);
  while (pins.released.load(std::memory_order_acquire) != attached) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

/// [va, va+len) inside [base, base+base_len), without ever computing an end that can wrap.
bool range_inside(uint64_t base, uint64_t base_len, uint64_t va, uint64_t len) {
  return va >= base && len <= base_len && va - base <= base_len - len;
}

struct alignas(64) Region {
  /// key << 32 | number of windows bound to the region; key 0 while the slot is unused.
  std::atomic<uint64_t> word{0};
  uint64_t addr = 0;       ///< first byte; virtual addresses are host addresses
  uint64_t len = 0;        ///< bytes
  uint32_t pd = 0;         ///< protection domain
  uint32_t access = 0;     ///< Access bits
  uint8_t next_byte = 0;   ///< key byte of the slot's next registration (application thread)
  /// Which registration this is (the table's count of them): a key byte comes round again
  /// after two registrations of a slot, so a key alone does not tell one from another
  /// (remote_access_stands).
  uint64_t serial = 0;
  TxPins pins;             ///< zero-copy frames carrying the region's bytes
};

enum class MwState : uint8_t {
  kFree,         ///< not allocated
  kUnbound,      ///< allocated, never bound
  kBinding,      ///< an lcore won the bind and is writing the fields
  kBound,
  kInvalidated,  ///< bound once, then invalidated; bindable again with a new key byte
};

/// The window state word: key in bits 0-31, state in 32-39, a generation in 40-63 that changes
/// on every transition, so a reader's before/after comparison never sees an A-B-A.
struct MwWord {
  uint32_t key;
  MwState state;
  uint32_t gen;

  static MwWord unpack(uint64_t w) {
    return {uint32_t(w), MwState(uint8_t(w >> 32)), uint32_t(w >> 40)};
  }
  uint64_t pack() const {
    return uint64_t(key) | uint64_t(state) << 32 | uint64_t(gen & 0xffffff) << 40;
  }
  MwWord next(uint32_t new_key, MwState s) const { return {new_key, s, gen + 1}; }
};

struct alignas(64) Window {
  /// MwWord, published last (release) after the fields it guards.
  std::atomic<uint64_t> word{0};
  std::atomic<uint32_t> pd{0};        ///< protection domain, set at allocation
  std::atomic<uint32_t> mr_key{0};    ///< region the binding covers part of
  std::atomic<uint64_t> context{0};   ///< reported with the remote-invalidate completion
  std::atomic<uint64_t> addr{0};      ///< first byte of the binding
  std::atomic<uint64_t> len{0};       ///< bytes of the binding
  std::atomic<uint32_t> access{0};    ///< remote rights of the binding
  std::atomic<uint32_t> qp_id{0};     ///< the only QP instance the binding may be used through
  std::atomic<uint32_t> handle{0};    ///< the key alloc_mw returned: names the allocation
};

/// The bound fields of a window, copied out and checked against the state word.
struct WindowView {
  MwWord word;
  uint32_t pd;
  uint32_t mr_key;
  uint64_t context;
  uint64_t addr;
  uint64_t len;
  uint32_t access;
  uint32_t qp_id;
  uint32_t handle;
};

/// A FIFO of free slot numbers: slots are reused as late as possible, so an old key byte
/// comes round again only after every other slot has been used.
class FreeList {
 public:
  /// All n slots free, in a random order: slot indexes are part of the keys.
  void reset(uint32_t n) {
    slots_.resize(n);
    for (uint32_t i = 0; i < n; i++) slots_[i] = i;
    for (uint32_t i = n; i > 1; i--) std::swap(slots_[i - 1], slots_[random32() % i]);
    head_ = 0;
    count_ = n;
  }
  bool pop(uint32_t* slot) {
    if (count_ == 0) return false;
    *slot = slots_[head_];
    head_ = (head_ + 1) % slots_.size();
    count_--;
    return true;
  }
  void push(uint32_t slot) {
    slots_[(head_ + count_) % slots_.size()] = slot;
    count_++;
  }

 private:
  std::vector<uint32_t> slots_;
  size_t head_ = 0;
  size_t count_ = 0;
};

}  // namespace

uint8_t random_key_byte(uint8_t a, uint8_t b) { return key_byte_avoiding(a, b, random32()); }

struct MemoryTable::Impl {
  std::unique_ptr<Region[]> mrs;
  std::unique_ptr<Window[]> mws;
  uint32_t max_mrs = 0;
  uint32_t max_mws = 0;
  std::mutex control;  ///< application threads: the free lists and region slot writes
  FreeList free_mrs;   ///< under `control`
  FreeList free_mws;   ///< under `control`
  uint64_t registrations = 0;  ///< regions registered so far (under `control`): Region::serial
  GracePeriod grace;
  std::atomic<uint64_t> pinned_at_deregister{0};

  /// The slot a region key names (index 1..max_mrs), whatever its key byte.
  Region* region_slot(uint32_t key) const {
    const uint32_t index = key_index(key);
    if (index == 0 || index > max_mrs) return nullptr;
    return &mrs[index - 1];
  }
  /// The live region with exactly this key; its fields are stable until the caller's next
  /// quiescent state.
  Region* region(uint32_t key) const {
    Region* r = region_slot(key);
    if (r == nullptr || uint32_t(r->word.load(std::memory_order_acquire) >> kRegionKeyShift) != key)
      return nullptr;
    return r;
  }
  Window* window_slot(uint32_t key) const {
    if (!is_mw_key(key)) return nullptr;
    const uint32_t index = key_index(key) - kMwKeyBase;
    return index < max_mws ? &mws[index] : nullptr;
  }

  /// Whether `v` is the window `key` names: its current key, or its handle while allocated.
  static bool names(const WindowView& v, uint32_t key, MwName name) {
    if (v.word.state == MwState::kFree) return false;
    return name == MwName::kHandle ? v.handle == key : v.word.key == key;
  }

  /// A consistent copy of a window: retried until no transition happened while copying.
  static WindowView read(const Window& w) {
    for (;;) {
      const uint64_t before = w.word.load(std::memory_order_acquire);
      WindowView v;
      v.word = MwWord::unpack(before);
      v.pd = w.pd.load(std::memory_order_relaxed);
      v.mr_key = w.mr_key.load(std::memory_order_relaxed);
      v.context = w.context.load(std::memory_order_relaxed);
      v.addr = w.addr.load(std::memory_order_relaxed);
      v.len = w.len.load(std::memory_order_relaxed);
      v.access = w.access.load(std::memory_order_relaxed);
      v.qp_id = w.qp_id.load(std::memory_order_relaxed);
      v.handle = w.handle.load(std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_acquire);
      if (w.word.load(std::memory_order_relaxed) == before) return v;
      rte_pause();
    }
  }

  /// Counts one more window bound to region `key`; false when the key is no longer live.
  bool hold_region(Region& r, uint32_t key) {
    uint64_t cur = r.word.load(std::memory_order_acquire);
    while (uint32_t(cur >> kRegionKeyShift) == key) {
      if (r.word.compare_exchange_weak(cur, cur + 1, std::memory_order_acq_rel)) return true;
    }
    return false;
  }
  /// Undoes hold_region for a window that stops being bound. The region cannot have gone:
  /// deregistration refuses while the count is non-zero.
  void release_region(uint32_t key) {
    if (Region* r = region_slot(key)) r->word.fetch_sub(1, std::memory_order_release);
  }
};

MemoryTable::MemoryTable() : impl_(std::make_unique<Impl>()) {}
MemoryTable::~MemoryTable() = default;

bool MemoryTable::init(uint32_t max_mrs, uint32_t max_mws, GracePeriod grace) {
  // Region indexes 1..max_mrs must stay below the window key space.
  if (max_mrs == 0 || max_mrs >= kMwKeyBase || max_mws == 0 || max_mws > kMaxMws) return false;
  impl_->mrs = std::make_unique<Region[]>(max_mrs);
  impl_->mws = std::make_unique<Window[]>(max_mws);
  impl_->max_mrs = max_mrs;
  impl_->max_mws = max_mws;
  impl_->free_mrs.reset(max_mrs);
  impl_->free_mws.reset(max_mws);
  impl_->grace = grace;
  return true;
}

bool MemoryTable::register_mr(uint32_t pd, const void* addr, uint64_t len, uint32_t access,
                              uint32_t* key) {
  const auto va = reinterpret_cast<uint64_t>(addr);
  if (key == nullptr || len == 0 || len - 1 > UINT64_MAX - va) return false;
  if ((access & ~kRegionRights) != 0) return false;
  if ((access & kWritingRights) != 0 && (access & kAccessLocalWrite) == 0) return false;
  std::lock_guard lock(impl_->control);
  uint32_t slot;
  if (impl_->mrs == nullptr || !impl_->free_mrs.pop(&slot)) return false;
  Region& r = impl_->mrs[slot];
  r.addr = va;
  r.len = len;
  r.pd = pd;
  r.access = access;
  r.next_byte = random_key_byte(r.next_byte, r.next_byte);
  r.serial = ++impl_->registrations;
  *key = make_key(slot + 1, r.next_byte);
  r.word.store(uint64_t(*key) << kRegionKeyShift, std::memory_order_release);
  return true;
}

bool MemoryTable::deregister_mr(uint32_t key) {
  if (is_mw_key(key)) return false;
  Region* r = impl_->region_slot(key);
  if (r == nullptr) return false;
  uint64_t cur = r->word.load(std::memory_order_acquire);
  do {
    if (uint32_t(cur >> kRegionKeyShift) != key || (cur & kBoundCountMask) != 0) return false;
  } while (!r->word.compare_exchange_weak(cur, 0, std::memory_order_acq_rel));
  // Before the grace period starts: an lcore that still reads the old epoch has not passed a
  // quiescent state since, so the wait below covers what it does with an earlier check.
  region_epoch_.fetch_add(1, std::memory_order_seq_cst);
  // An lcore may have matched the key just before it was cleared; the slot is rewritten only
  // after every lcore has passed a quiescent state since.
  impl_->grace.wait();
  // No lcore attaches the region's bytes to a frame any more; those attached before are
  // waited for, so the application may free the memory when this returns.
  if (!wait_unpinned(r->pins)) impl_->pinned_at_deregister.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(impl_->control);
  impl_->free_mrs.push(uint32_t(r - impl_->mrs.get()));
  return true;
}

uint64_t MemoryTable::pinned_at_deregister() const {
  return impl_->pinned_at_deregister.load(std::memory_order_relaxed);
}

uint32_t MemoryTable::alloc_mw(uint32_t pd, uint64_t context) {
  std::lock_guard lock(impl_->control);
  uint32_t slot;
  if (impl_->mws == nullptr || !impl_->free_mws.pop(&slot)) return 0;
  Window& w = impl_->mws[slot];
  const MwWord old = MwWord::unpack(w.word.load(std::memory_order_relaxed));
  // A new key byte, so keys of the slot's previous allocation stay dead.
  const uint32_t key = make_key(kMwKeyBase + slot, random_key_byte(key_byte(old.key), key_byte(old.key)));
  w.pd.store(pd, std::memory_order_relaxed);
  w.context.store(context, std::memory_order_relaxed);
  w.handle.store(key, std::memory_order_relaxed);
  w.qp_id.store(0, std::memory_order_relaxed);
  w.word.store(old.next(key, MwState::kUnbound).pack(), std::memory_order_release);
  return key;
}

uint32_t MemoryTable::window_key(uint32_t handle) const {
  const Window* w = impl_->window_slot(handle);
  if (w == nullptr) return 0;
  const WindowView v = Impl::read(*w);
  return Impl::names(v, handle, MwName::kHandle) ? v.word.key : 0;
}

bool MemoryTable::dealloc_mw(uint32_t key) {
  Window* w = impl_->window_slot(key);
  if (w == nullptr) return false;
  for (;;) {
    const WindowView v = Impl::read(*w);
    if (!Impl::names(v, key, MwName::kHandle) && !Impl::names(v, key, MwName::kCurrentKey)) return false;
    if (v.word.state == MwState::kBinding) {  // an lcore is mid-bind: a few stores away
      rte_pause();
      continue;
    }
    uint64_t expected = v.word.pack();
    if (!w->word.compare_exchange_strong(expected, v.word.next(v.word.key, MwState::kFree).pack(),
                                         std::memory_order_acq_rel))
      continue;
    if (v.word.state == MwState::kBound) impl_->release_region(v.mr_key);
    std::lock_guard lock(impl_->control);
    impl_->free_mws.push(uint32_t(w - impl_->mws.get()));
    return true;
  }
}

unsigned MemoryTable::invalidate_bound_to(uint32_t qp_id) {
  unsigned n = 0;
  for (uint32_t i = 0; i < impl_->max_mws; i++) {
    Window& w = impl_->mws[i];
    for (;;) {
      const WindowView v = Impl::read(w);
      if (v.word.state != MwState::kBound || v.qp_id != qp_id) break;
      uint64_t expected = v.word.pack();
      if (!w.word.compare_exchange_strong(expected, v.word.next(v.word.key, MwState::kInvalidated).pack(),
                                          std::memory_order_acq_rel))
        continue;
      impl_->release_region(v.mr_key);
      n++;
      break;
    }
  }
  return n;
}

KeyCheck MemoryTable::check_local(uint32_t pd, uint32_t lkey, uint64_t addr, uint64_t len,
                                  bool need_local_write, Resolved* out) const {
  if (len == 0) {
    if (out != nullptr) out->host = &zero_length_sink;
    return KeyCheck::kOk;
  }
  if (is_mw_key(lkey)) return KeyCheck::kBadKey;  // windows carry remote rights only
  const Region* r = impl_->region(lkey);
  if (r == nullptr) return KeyCheck::kBadKey;
  if (r->pd != pd) return KeyCheck::kBadPd;
  if (need_local_write && (r->access & kAccessLocalWrite) == 0) return KeyCheck::kNoAccess;
  if (!range_inside(r->addr, r->len, addr, len)) return KeyCheck::kOutOfRange;
  if (out != nullptr) {
    out->host = reinterpret_cast<uint8_t*>(addr);
    out->pins = const_cast<TxPins*>(&r->pins);
  }
  return KeyCheck::kOk;
}

KeyCheck MemoryTable::check_remote(uint32_t pd, uint32_t qp_id, uint32_t rkey, uint64_t va,
                                   uint64_t len, uint32_t access, Resolved* out) const {
  if (len == 0 && (access & kAccessRemoteAtomic) == 0) {
    if (out != nullptr) out->host = &zero_length_sink;
    return KeyCheck::kOk;
  }
  if (access == 0 || (access & ~kRemoteRights) != 0) return KeyCheck::kNoAccess;
  if (!is_mw_key(rkey)) {
    const Region* r = impl_->region(rkey);
    if (r == nullptr) return KeyCheck::kBadKey;
    if (r->pd != pd) return KeyCheck::kBadPd;
    if ((r->access & access) != access) return KeyCheck::kNoAccess;
    if (!range_inside(r->addr, r->len, va, len)) return KeyCheck::kOutOfRange;
    if (out != nullptr) {
      out->host = reinterpret_cast<uint8_t*>(va);
      out->standing = r->serial;
    }
    return KeyCheck::kOk;
  }
  const Window* w = impl_->window_slot(rkey);
  if (w == nullptr) return KeyCheck::kBadKey;
  const WindowView v = Impl::read(*w);
  if (v.word.key != rkey) return KeyCheck::kBadKey;
  // An invalidated window keeps its key until the next bind, so the peer learns why.
  if (v.word.state == MwState::kInvalidated) return KeyCheck::kInvalidated;
  if (v.word.state != MwState::kBound) return KeyCheck::kBadKey;
  if (v.pd != pd) return KeyCheck::kBadPd;
  if (v.qp_id != qp_id) return KeyCheck::kBadQp;
  if ((v.access & access) != access) return KeyCheck::kNoAccess;
  if (!range_inside(v.addr, v.len, va, len)) return KeyCheck::kOutOfRange;
  if (out != nullptr) {
    out->host = reinterpret_cast<uint8_t*>(va);
    out->standing = v.word.pack();
  }
  return KeyCheck::kOk;
}

bool MemoryTable::remote_access_stands(uint32_t rkey, uint64_t standing) const {
  if (!is_mw_key(rkey)) {
    const Region* r = impl_->region(rkey);
    return r != nullptr && r->serial == standing;  // stable while the key is published, as the rest
  }
  const Window* w = impl_->window_slot(rkey);
  return w != nullptr && w->word.load(std::memory_order_acquire) == standing;
}

KeyCheck MemoryTable::bind_mw(uint32_t pd, uint32_t qp_id, uint32_t mw_key, uint32_t mr_key,
                              uint64_t addr, uint64_t len, uint32_t access, uint8_t new_key_byte,
                              uint32_t* new_key, MwName name) {
  Window* w = impl_->window_slot(mw_key);
  if (w == nullptr) return KeyCheck::kBadKey;
  if (access == 0 || (access & ~kRemoteRights) != 0) return KeyCheck::kNoAccess;
  if (len == 0) return KeyCheck::kOutOfRange;
  for (;;) {
    const WindowView v = Impl::read(*w);
    if (!Impl::names(v, mw_key, name)) return KeyCheck::kBadKey;
    if (v.word.state != MwState::kUnbound && v.word.state != MwState::kInvalidated)
      return KeyCheck::kNoAccess;  // bound, or another lcore is binding it
    if (v.pd != pd) return KeyCheck::kBadPd;
    const uint32_t cur_key = v.word.key;
    if (new_key_byte == key_byte(cur_key)) return KeyCheck::kBadKey;

    if (is_mw_key(mr_key)) return KeyCheck::kBadKey;
    Region* r = impl_->region(mr_key);
    if (r == nullptr) return KeyCheck::kBadKey;
    if (r->pd != pd) return KeyCheck::kBadPd;
    if ((r->access & kAccessMwBind) == 0) return KeyCheck::kNoAccess;
    if ((access & kWritingRights) != 0 && (r->access & kAccessLocalWrite) == 0)
      return KeyCheck::kNoAccess;
    if (!range_inside(r->addr, r->len, addr, len)) return KeyCheck::kOutOfRange;

    // Winning this CAS makes this lcore the only writer of the fields.
    uint64_t expected = v.word.pack();
    const MwWord binding = v.word.next(cur_key, MwState::kBinding);
    if (!w->word.compare_exchange_strong(expected, binding.pack(), std::memory_order_acq_rel))
      continue;
    if (!impl_->hold_region(*r, mr_key)) {  // deregistered since the check above
      w->word.store(binding.next(cur_key, v.word.state).pack(), std::memory_order_release);
      return KeyCheck::kBadKey;
    }
    w->mr_key.store(mr_key, std::memory_order_relaxed);
    w->addr.store(addr, std::memory_order_relaxed);
    w->len.store(len, std::memory_order_relaxed);
    w->access.store(access, std::memory_order_relaxed);
    w->qp_id.store(qp_id, std::memory_order_relaxed);
    const uint32_t key = make_key(key_index(cur_key), new_key_byte);
    w->word.store(binding.next(key, MwState::kBound).pack(), std::memory_order_release);
    if (new_key != nullptr) *new_key = key;
    return KeyCheck::kOk;
  }
}

KeyCheck MemoryTable::invalidate_mw(uint32_t pd, uint32_t qp_id, uint32_t key, uint64_t* context,
                                    MwName name) {
  Window* w = impl_->window_slot(key);
  if (w == nullptr) return KeyCheck::kBadKey;
  for (;;) {
    const WindowView v = Impl::read(*w);
    if (!Impl::names(v, key, name)) return KeyCheck::kBadKey;
    // Unbound, already invalidated, or mid-bind to a new key: nothing is bound under `key`.
    if (v.word.state != MwState::kBound) return KeyCheck::kInvalidated;
    if (v.pd != pd) return KeyCheck::kBadPd;
    // IBTA: a type-2 window is invalidated only through the QP it is bound to, so the peer of
    // another connection cannot revoke it.
    if (v.qp_id != qp_id) return KeyCheck::kBadQp;
    uint64_t expected = v.word.pack();
    if (!w->word.compare_exchange_strong(expected, v.word.next(v.word.key, MwState::kInvalidated).pack(),
                                         std::memory_order_acq_rel))
      continue;
    impl_->release_region(v.mr_key);
    if (context != nullptr) *context = v.context;
    return KeyCheck::kOk;
  }
}

const char* key_check_name(KeyCheck k) {
  switch (k) {
    case KeyCheck::kOk: return "ok";
    case KeyCheck::kBadKey: return "bad_key";
    case KeyCheck::kBadPd: return "bad_pd";
    case KeyCheck::kBadQp: return "bad_qp";
    case KeyCheck::kNoAccess: return "no_access";
    case KeyCheck::kOutOfRange: return "out_of_range";
    case KeyCheck::kInvalidated: return "invalidated";
  }
  return "unknown";
}

}  // namespace ndnic::nic
