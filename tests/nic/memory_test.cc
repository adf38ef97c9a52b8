// Region and window tables: keys, protection domains, rights, overflow-safe ranges, the type-2
// window life cycle, and a register/deregister race against a QSBR reader.
#include <gtest/gtest.h>

#include <rte_rcu_qsbr.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "nic/memory.h"

namespace ndnic::nic {
namespace {

constexpr uint32_t kPd = 7;
constexpr uint32_t kOtherPd = 8;
constexpr uint32_t kQpn = 0x11;
constexpr uint32_t kOtherQpn = 0x12;
constexpr uint32_t kAllRemote = kAccessRemoteRead | kAccessRemoteWrite | kAccessRemoteAtomic;
constexpr uint32_t kAllRights = kAccessLocalWrite | kAllRemote | kAccessMwBind;
constexpr size_t kBufLen = 4096;

uint64_t va(const void* p) { return reinterpret_cast<uint64_t>(p); }

class MemoryTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(table.init(16, 16, nullptr)); }

  uint32_t reg(uint32_t access, uint32_t pd = kPd) {
    uint32_t key = 0;
    EXPECT_TRUE(table.register_mr(pd, buf.data(), buf.size(), access, &key));
    return key;
  }
  KeyCheck remote(uint32_t rkey, uint64_t addr, uint64_t len, uint32_t access,
                  uint32_t qpn = kQpn, uint32_t pd = kPd) {
    Resolved r;
    KeyCheck k = table.check_remote(pd, qpn, rkey, addr, len, access, &r);
    if (k == KeyCheck::kOk && len > 0) {
      EXPECT_EQ(r.host, reinterpret_cast<uint8_t*>(addr));
    }
    return k;
  }
  KeyCheck local(uint32_t lkey, uint64_t addr, uint64_t len, bool write = false,
                 uint32_t pd = kPd) {
    Resolved r;
    return table.check_local(pd, lkey, addr, len, write, &r);
  }
  /// Binds a fresh window over buf[off, off+len) with `access`; returns the bound key.
  uint32_t bound_window(uint32_t mr, uint64_t off, uint64_t len, uint32_t access,
                        uint32_t* mw_out = nullptr) {
    const uint32_t mw = table.alloc_mw(kPd, 0xc0ffee);
    EXPECT_NE(mw, 0u);
    uint32_t key = 0;
    EXPECT_EQ(KeyCheck::kOk, table.bind_mw(kPd, kQpn, mw, mr, va(buf.data()) + off, len, access,
                                           uint8_t(key_byte(mw) + 1), &key));
    if (mw_out != nullptr) *mw_out = mw;
    return key;
  }

  MemoryTable table;
  std::vector<uint8_t> buf = std::vector<uint8_t>(kBufLen);
};

TEST_F(MemoryTest, RegisterCheckDeregister) {
  const uint32_t key = reg(kAccessLocalWrite | kAccessRemoteRead);
  EXPECT_NE(key, 0u);
  EXPECT_FALSE(is_mw_key(key));
  Resolved r;
  EXPECT_EQ(KeyCheck::kOk, table.check_local(kPd, key, va(buf.data()) + 10, 100, true, &r));
  EXPECT_EQ(r.host, buf.data() + 10);
  EXPECT_EQ(KeyCheck::kOk, local(key, va(buf.data()), kBufLen));
  EXPECT_TRUE(table.deregister_mr(key));
  EXPECT_EQ(KeyCheck::kBadKey, local(key, va(buf.data()), 1));
  EXPECT_EQ(KeyCheck::kBadKey, remote(key, va(buf.data()), 1, kAccessRemoteRead));
  EXPECT_FALSE(table.deregister_mr(key));
}

// Frames that carry a region's bytes where they lie (zero-copy transmit) pin it: check_local
// hands out the region's pins (a remote access none: READ responses are copied), and
// deregistration fails the key at once but returns only when every attached frame is freed.
TEST_F(MemoryTest, DeregistrationWaitsForFramesCarryingTheRegion) {
  const uint32_t key = reg(kAllRights);
  Resolved l, r;
  ASSERT_EQ(KeyCheck::kOk, table.check_local(kPd, key, va(buf.data()), 64, false, &l));
  ASSERT_EQ(KeyCheck::kOk, table.check_remote(kPd, kQpn, key, va(buf.data()), 64, kAccessRemoteRead, &r));
  ASSERT_NE(l.pins, nullptr);
  EXPECT_EQ(r.pins, nullptr);

  l.pins->attached.fetch_add(2);  // two frames out, which another thread frees later
  l.pins->released.fetch_add(1);
  std::atomic<bool> returned{false};
  std::thread dereg([&] {
    EXPECT_TRUE(table.deregister_mr(key));
    returned = true;
  });
  while (local(key, va(buf.data()), 1) != KeyCheck::kBadKey) std::this_thread::yield();
  EXPECT_FALSE(returned);  // the key is gone, the region is not: one frame is still out
  l.pins->released.fetch_add(1);
  dereg.join();
  EXPECT_TRUE(returned);
  EXPECT_EQ(table.pinned_at_deregister(), 0u);
}

// A frame never freed (a peer that stopped taking frames) holds deregistration kPinWaitNs, no
// longer; the give-up is counted.
TEST_F(MemoryTest, DeregistrationGivesUpOnAFrameNeverFreed) {
  const uint32_t key = reg(kAccessLocalWrite);
  Resolved l;
  ASSERT_EQ(KeyCheck::kOk, table.check_local(kPd, key, va(buf.data()), 64, false, &l));
  l.pins->attached.fetch_add(1);
  EXPECT_TRUE(table.deregister_mr(key));
  EXPECT_EQ(table.pinned_at_deregister(), 1u);
  EXPECT_EQ(KeyCheck::kBadKey, local(key, va(buf.data()), 1));
}

TEST_F(MemoryTest, BadRegistrations) {
  uint32_t key;
  EXPECT_FALSE(table.register_mr(kPd, buf.data(), 0, kAccessLocalWrite, &key));
  // [UINT64_MAX - 9, +20) wraps; a region ending exactly at the top does not.
  const auto* top = reinterpret_cast<const void*>(UINT64_MAX - 9);
  EXPECT_FALSE(table.register_mr(kPd, top, 20, 0, &key));
  EXPECT_TRUE(table.register_mr(kPd, top, 10, 0, &key));
  // Remote write and atomic need local write (ib_check_mr_access); unknown bits are refused.
  EXPECT_FALSE(table.register_mr(kPd, buf.data(), kBufLen, kAccessRemoteWrite, &key));
  EXPECT_FALSE(table.register_mr(kPd, buf.data(), kBufLen, kAccessRemoteAtomic, &key));
  EXPECT_FALSE(table.register_mr(kPd, buf.data(), kBufLen, 1u << 9, &key));
  EXPECT_FALSE(table.register_mr(kPd, buf.data(), kBufLen, 0, nullptr));
}

TEST_F(MemoryTest, TableFullAndKeyZero) {
  std::vector<uint32_t> keys;
  uint32_t key;
  while (table.register_mr(kPd, buf.data(), kBufLen, 0, &key)) keys.push_back(key);
  EXPECT_EQ(keys.size(), 16u);
  EXPECT_EQ(KeyCheck::kBadKey, local(0, va(buf.data()), 1));
  EXPECT_FALSE(table.deregister_mr(0));
  for (uint32_t k : keys) EXPECT_TRUE(table.deregister_mr(k));
  EXPECT_TRUE(table.register_mr(kPd, buf.data(), kBufLen, 0, &key));
}

TEST(MemoryKeys, ReRegisteringASlotChangesTheKeyByte) {
  MemoryTable table;
  ASSERT_TRUE(table.init(1, 1, nullptr));  // one slot: every registration reuses it
  std::vector<uint8_t> buf(64);
  uint32_t first, second;
  ASSERT_TRUE(table.register_mr(kPd, buf.data(), buf.size(), 0, &first));
  ASSERT_TRUE(table.deregister_mr(first));
  ASSERT_TRUE(table.register_mr(kPd, buf.data(), buf.size(), 0, &second));
  EXPECT_EQ(key_index(first), key_index(second));
  EXPECT_NE(key_byte(first), key_byte(second));
  Resolved r;
  EXPECT_EQ(KeyCheck::kBadKey, table.check_local(kPd, first, va(buf.data()), 1, false, &r));
  EXPECT_EQ(KeyCheck::kOk, table.check_local(kPd, second, va(buf.data()), 1, false, &r));
  EXPECT_FALSE(table.deregister_mr(first));
}

// A WRITE's later packets and a READ's responses ask whether the check made at the first still
// stands. It does while the region stays registered; not once it is deregistered, and not for
// a later registration of its slot that came round to the same key (one slot: the key byte
// differs from the last one, but may repeat the one before).
TEST(MemoryKeys, AnAccessStandsForItsOwnRegistrationOnly) {
  MemoryTable table;
  ASSERT_TRUE(table.init(1, 1, nullptr));
  std::vector<uint8_t> buf(64);
  constexpr uint32_t kRw = kAccessLocalWrite | kAccessRemoteWrite;
  uint32_t key, again = 0;
  ASSERT_TRUE(table.register_mr(kPd, buf.data(), buf.size(), kRw, &key));
  Resolved r;
  ASSERT_EQ(KeyCheck::kOk, table.check_remote(kPd, kQpn, key, va(buf.data()), buf.size(), kAccessRemoteWrite, &r));
  EXPECT_TRUE(table.remote_access_stands(key, r.standing));
  ASSERT_TRUE(table.deregister_mr(key));
  EXPECT_FALSE(table.remote_access_stands(key, r.standing));
  for (int i = 0; i < 100000 && again != key; i++) {
    if (again != 0) {
      ASSERT_TRUE(table.deregister_mr(again));
    }
    ASSERT_TRUE(table.register_mr(kPd, buf.data(), buf.size(), kRw, &again));
  }
  ASSERT_EQ(again, key) << "the slot's key never came round again";
  EXPECT_FALSE(table.remote_access_stands(key, r.standing)) << "a later registration under the same key";
  Resolved now;
  ASSERT_EQ(KeyCheck::kOk, table.check_remote(kPd, kQpn, key, va(buf.data()), buf.size(), kAccessRemoteWrite, &now));
  EXPECT_TRUE(table.remote_access_stands(key, now.standing));
}

// Pairs of bytes to avoid, and every random step: the byte differs from both, and each
// byte allowed comes from as many steps as any other (a fair choice for a uniform random).
TEST(MemoryKeys, KeyByteAvoidingNeverPicksEitherByteAndPicksTheRestEvenly) {
  for (unsigned a = 0; a < 256; a++) {
    // b equal to a, beside it on either side (the wrap included), opposite, and at the ends.
    for (unsigned b : {a, (a + 1) % 256, (a + 255) % 256, (a + 128) % 256, 0u, 255u}) {
      std::vector<unsigned> hits(256, 0);
      const unsigned allowed = a == b ? 255 : 254;
      for (uint32_t r = 0; r < 255u * 254u; r++) hits[key_byte_avoiding(uint8_t(a), uint8_t(b), r)]++;
      ASSERT_EQ(hits[a], 0u) << a << " " << b;
      ASSERT_EQ(hits[b], 0u) << a << " " << b;
      for (unsigned v = 0; v < 256; v++) {
        if (v == a || v == b) continue;
        ASSERT_EQ(hits[v], 255u * 254u / allowed) << a << " " << b << " " << v;
      }
    }
  }
}

// Key bytes come from a per-thread batch of getrandom words: a forked child must still draw
// its own, not the rest of the batch its parent holds (which the parent goes on to use).
TEST(MemoryKeys, AForkedChildDrawsKeyBytesOfItsOwn) {
  constexpr int kDraws = 32;
  (void)random_key_byte(0, 0);  // this thread now holds a batch, mostly unused
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    uint8_t mine[kDraws];
    for (uint8_t& b : mine) b = random_key_byte(0, 0);
    _exit(write(fds[1], mine, sizeof mine) == ssize_t(sizeof mine) ? 0 : 1);
  }
  close(fds[1]);
  uint8_t theirs[kDraws], mine[kDraws];
  ASSERT_EQ(read(fds[0], theirs, sizeof theirs), ssize_t(sizeof theirs));
  close(fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_EQ(status, 0);
  for (uint8_t& b : mine) b = random_key_byte(0, 0);
  // Equal by chance: one in 255^32.
  EXPECT_NE(std::memcmp(mine, theirs, kDraws), 0);
}

// window_key reports the engine's key: the handle's before any bind, the new key after one,
// the same after a bind that failed, 0 once the window is freed.
TEST_F(MemoryTest, WindowKeyIsTheKeyTheLastBindThatRanGave) {
  const uint32_t mr = reg(kAllRights | kAccessMwBind);
  const uint32_t w = table.alloc_mw(kPd, 0);
  ASSERT_NE(w, 0u);
  EXPECT_EQ(table.window_key(w), w);
  uint32_t key = 0;
  const uint8_t next = uint8_t(key_byte(w) + 1);
  ASSERT_EQ(KeyCheck::kOk, table.bind_mw(kPd, kQpn, w, mr, va(buf.data()), 64, kAccessRemoteWrite, next, &key,
                                         MwName::kHandle));
  EXPECT_EQ(table.window_key(w), key);
  EXPECT_EQ(key_byte(key), next);
  // Bound already: refused, key unchanged.
  EXPECT_NE(KeyCheck::kOk, table.bind_mw(kPd, kQpn, w, mr, va(buf.data()), 64, kAccessRemoteWrite,
                                         uint8_t(next + 1), nullptr, MwName::kHandle));
  EXPECT_EQ(table.window_key(w), key);
  EXPECT_EQ(table.window_key(key), 0u) << "named by its handle only";
  EXPECT_TRUE(table.dealloc_mw(w));
  EXPECT_EQ(table.window_key(w), 0u);
}

TEST_F(MemoryTest, ProtectionDomain) {
  const uint32_t key = reg(kAccessLocalWrite | kAccessRemoteRead);
  EXPECT_EQ(KeyCheck::kBadPd, local(key, va(buf.data()), 1, false, kOtherPd));
  EXPECT_EQ(KeyCheck::kBadPd,
            remote(key, va(buf.data()), 1, kAccessRemoteRead, kQpn, kOtherPd));
}

TEST_F(MemoryTest, Rights) {
  const uint64_t a = va(buf.data());
  const uint32_t ro = reg(0);
  EXPECT_EQ(KeyCheck::kOk, local(ro, a, 8, false));
  EXPECT_EQ(KeyCheck::kNoAccess, local(ro, a, 8, true));
  EXPECT_EQ(KeyCheck::kNoAccess, remote(ro, a, 8, kAccessRemoteRead));

  const uint32_t rd = reg(kAccessRemoteRead);
  EXPECT_EQ(KeyCheck::kOk, remote(rd, a, 8, kAccessRemoteRead));
  EXPECT_EQ(KeyCheck::kNoAccess, remote(rd, a, 8, kAccessRemoteWrite));
  EXPECT_EQ(KeyCheck::kNoAccess, remote(rd, a, 8, kAccessRemoteAtomic));

  const uint32_t wr = reg(kAccessLocalWrite | kAccessRemoteWrite);
  EXPECT_EQ(KeyCheck::kOk, remote(wr, a, 8, kAccessRemoteWrite));
  EXPECT_EQ(KeyCheck::kNoAccess, remote(wr, a, 8, kAccessRemoteRead));
  EXPECT_EQ(KeyCheck::kNoAccess, remote(wr, a, 8, kAccessRemoteAtomic));

  const uint32_t at = reg(kAccessLocalWrite | kAccessRemoteAtomic);
  EXPECT_EQ(KeyCheck::kOk, remote(at, a, 8, kAccessRemoteAtomic));
  EXPECT_EQ(KeyCheck::kNoAccess, remote(at, a, 8, kAccessRemoteWrite));
  // Not a remote right at all.
  EXPECT_EQ(KeyCheck::kNoAccess, remote(at, a, 8, kAccessLocalWrite));
}

TEST_F(MemoryTest, RangesAreOverflowSafe) {
  const uint64_t a = va(buf.data());
  const uint32_t key = reg(kAccessLocalWrite | kAccessRemoteRead);
  EXPECT_EQ(KeyCheck::kOk, local(key, a + kBufLen - 1, 1));
  EXPECT_EQ(KeyCheck::kOutOfRange, local(key, a + kBufLen - 1, 2));
  EXPECT_EQ(KeyCheck::kOutOfRange, local(key, a - 1, 2));
  EXPECT_EQ(KeyCheck::kOutOfRange, local(key, a + kBufLen, 1));
  // va + len wraps to a small number inside the region.
  EXPECT_EQ(KeyCheck::kOutOfRange, local(key, a + 16, UINT64_MAX - 8));
  EXPECT_EQ(KeyCheck::kOutOfRange, remote(key, a + 16, UINT64_MAX, kAccessRemoteRead));
  EXPECT_EQ(KeyCheck::kOutOfRange, remote(key, UINT64_MAX, 2, kAccessRemoteRead));

  // A region at the very top of the address space.
  uint32_t top;
  ASSERT_TRUE(table.register_mr(kPd, reinterpret_cast<const void*>(UINT64_MAX - 15), 16,
                                kAccessRemoteRead, &top));
  EXPECT_EQ(KeyCheck::kOk, remote(top, UINT64_MAX - 15, 16, kAccessRemoteRead));
  EXPECT_EQ(KeyCheck::kOk, remote(top, UINT64_MAX, 1, kAccessRemoteRead));
  EXPECT_EQ(KeyCheck::kOutOfRange, remote(top, UINT64_MAX, 2, kAccessRemoteRead));
  EXPECT_EQ(KeyCheck::kOutOfRange, remote(top, UINT64_MAX - 16, 2, kAccessRemoteRead));
}

TEST_F(MemoryTest, ZeroLengthChecksNothing) {
  // C9-88 / rxe check_rkey: a zero-length READ or WRITE needs no valid R_Key or VA; rxe's
  // copy_data never looks up a zero-length SGE. The address is non-null and never touched.
  Resolved r;
  EXPECT_EQ(KeyCheck::kOk, table.check_remote(kPd, kQpn, 0xdead00, 0, 0, kAccessRemoteWrite, &r));
  EXPECT_NE(r.host, nullptr);
  EXPECT_EQ(KeyCheck::kOk, table.check_local(kPd, 0xdead00, 0, 0, true, &r));
  EXPECT_NE(r.host, nullptr);
  // Atomics always move 8 bytes, so a zero length there gets the full check.
  EXPECT_EQ(KeyCheck::kBadKey, table.check_remote(kPd, kQpn, 0xdead00, 0, 0, kAccessRemoteAtomic, &r));
}

TEST_F(MemoryTest, WindowKeysAreNotLocalKeys) {
  const uint32_t mr = reg(kAccessLocalWrite | kAccessMwBind);
  const uint32_t w = bound_window(mr, 0, 64, kAccessRemoteRead);
  EXPECT_TRUE(is_mw_key(w));
  EXPECT_EQ(KeyCheck::kBadKey, local(w, va(buf.data()), 8));
}

TEST_F(MemoryTest, WindowRemoteAccess) {
  const uint64_t a = va(buf.data());
  // The region itself grants no remote right: the window's rights are its own.
  const uint32_t mr = reg(kAccessLocalWrite | kAccessMwBind);
  EXPECT_EQ(KeyCheck::kNoAccess, remote(mr, a, 8, kAccessRemoteRead));
  const uint32_t w = bound_window(mr, 256, 512, kAccessRemoteRead | kAccessRemoteWrite);
  EXPECT_EQ(KeyCheck::kOk, remote(w, a + 256, 512, kAccessRemoteRead));
  EXPECT_EQ(KeyCheck::kOk, remote(w, a + 700, 68, kAccessRemoteWrite));
  EXPECT_EQ(KeyCheck::kOutOfRange, remote(w, a + 255, 8, kAccessRemoteRead));
  EXPECT_EQ(KeyCheck::kOutOfRange, remote(w, a + 760, 9, kAccessRemoteRead));
  EXPECT_EQ(KeyCheck::kOutOfRange, remote(w, a + 300, UINT64_MAX, kAccessRemoteRead));
  EXPECT_EQ(KeyCheck::kNoAccess, remote(w, a + 256, 8, kAccessRemoteAtomic));
  EXPECT_EQ(KeyCheck::kBadQp, remote(w, a + 256, 8, kAccessRemoteRead, kOtherQpn));
  EXPECT_EQ(KeyCheck::kBadPd, remote(w, a + 256, 8, kAccessRemoteRead, kQpn, kOtherPd));
  // A different key byte on the same window index is stale.
  EXPECT_EQ(KeyCheck::kBadKey, remote(w ^ 0x1, a + 256, 8, kAccessRemoteRead));
}

// The same for a window: its access stands while the binding does, not after an invalidation,
// nor for a later binding, even under the same key.
TEST_F(MemoryTest, AWindowAccessStandsForItsOwnBindingOnly) {
  const uint64_t a = va(buf.data());
  const uint32_t mr = reg(kAccessLocalWrite | kAccessMwBind);
  uint32_t mw = 0;
  const uint32_t w = bound_window(mr, 0, 64, kAccessRemoteWrite, &mw);
  Resolved r;
  ASSERT_EQ(KeyCheck::kOk, table.check_remote(kPd, kQpn, w, a, 64, kAccessRemoteWrite, &r));
  EXPECT_TRUE(table.remote_access_stands(w, r.standing));
  uint64_t ctx = 0;
  ASSERT_EQ(KeyCheck::kOk, table.invalidate_mw(kPd, kQpn, w, &ctx));
  EXPECT_FALSE(table.remote_access_stands(w, r.standing));
  uint32_t key = 0;
  ASSERT_EQ(KeyCheck::kOk, table.bind_mw(kPd, kQpn, w, mr, a, 64, kAccessRemoteWrite, uint8_t(key_byte(w) + 1), &key));
  ASSERT_EQ(KeyCheck::kOk, table.invalidate_mw(kPd, kQpn, key, &ctx));
  uint32_t back = 0;
  ASSERT_EQ(KeyCheck::kOk, table.bind_mw(kPd, kQpn, key, mr, a, 64, kAccessRemoteWrite, key_byte(w), &back));
  ASSERT_EQ(back, w);  // the first binding's key again
  EXPECT_FALSE(table.remote_access_stands(w, r.standing)) << "a later binding under the same key";
  EXPECT_EQ(KeyCheck::kOk, remote(w, a, 64, kAccessRemoteWrite));
}

TEST_F(MemoryTest, WindowAtomics) {
  // rxe allows remote atomic on windows (RXE_ACCESS_SUPPORTED_MW) and C10-74 asks for local
  // write on the region, as for remote write.
  const uint64_t a = va(buf.data());
  const uint32_t mr = reg(kAccessLocalWrite | kAccessMwBind);
  const uint32_t w = bound_window(mr, 0, 64, kAccessRemoteAtomic);
  EXPECT_EQ(KeyCheck::kOk, remote(w, a + 8, 8, kAccessRemoteAtomic));
  EXPECT_EQ(KeyCheck::kNoAccess, remote(w, a + 8, 8, kAccessRemoteRead));
}

TEST_F(MemoryTest, InvalidateThenRebind) {
  const uint64_t a = va(buf.data());
  const uint32_t mr = reg(kAccessLocalWrite | kAccessMwBind);
  uint32_t mw;
  const uint32_t w = bound_window(mr, 0, 128, kAccessRemoteRead, &mw);
  uint64_t ctx = 0;
  EXPECT_EQ(KeyCheck::kBadKey, table.invalidate_mw(kPd, kQpn, mw, &ctx));  // the pre-bind key is stale
  EXPECT_EQ(KeyCheck::kBadPd, table.invalidate_mw(kOtherPd, kQpn, w, &ctx));
  EXPECT_EQ(KeyCheck::kOk, table.invalidate_mw(kPd, kQpn, w, &ctx));
  EXPECT_EQ(ctx, 0xc0ffeeu);
  EXPECT_EQ(KeyCheck::kInvalidated, remote(w, a, 8, kAccessRemoteRead));
  EXPECT_EQ(KeyCheck::kInvalidated, table.invalidate_mw(kPd, kQpn, w, &ctx));

  // Bound again with a new key byte: the new key works, the old one does not.
  uint32_t w2 = 0;
  EXPECT_EQ(KeyCheck::kBadKey, table.bind_mw(kPd, kQpn, w, mr, a, 64, kAccessRemoteWrite,
                                             key_byte(w), &w2));
  EXPECT_EQ(KeyCheck::kOk, table.bind_mw(kPd, kOtherQpn, w, mr, a + 64, 64, kAccessRemoteWrite,
                                         uint8_t(key_byte(w) + 7), &w2));
  EXPECT_EQ(key_index(w2), key_index(w));
  EXPECT_EQ(key_byte(w2), uint8_t(key_byte(w) + 7));
  EXPECT_EQ(KeyCheck::kBadKey, remote(w, a + 64, 8, kAccessRemoteRead));
  EXPECT_EQ(KeyCheck::kOk, remote(w2, a + 64, 64, kAccessRemoteWrite, kOtherQpn));
  EXPECT_EQ(KeyCheck::kBadQp, remote(w2, a + 64, 8, kAccessRemoteWrite, kQpn));
  EXPECT_EQ(KeyCheck::kOutOfRange, remote(w2, a, 8, kAccessRemoteWrite, kOtherQpn));
  EXPECT_EQ(KeyCheck::kBadKey, table.invalidate_mw(kPd, kQpn, w, &ctx));
}

TEST_F(MemoryTest, BindRefusals) {
  const uint64_t a = va(buf.data());
  const uint32_t no_bind = reg(kAccessLocalWrite | kAccessRemoteRead);
  const uint32_t ro_bind = reg(kAccessMwBind);
  const uint32_t mr = reg(kAccessLocalWrite | kAccessMwBind);
  const uint32_t other_pd_mr = reg(kAccessLocalWrite | kAccessMwBind, kOtherPd);
  const uint32_t mw = table.alloc_mw(kPd, 1);
  const uint8_t nb = uint8_t(key_byte(mw) + 1);
  uint32_t k;
  auto bind = [&](uint32_t region, uint64_t addr, uint64_t len, uint32_t access,
                  uint8_t byte, uint32_t pd = kPd) {
    return table.bind_mw(pd, kQpn, mw, region, addr, len, access, byte, &k);
  };
  EXPECT_EQ(KeyCheck::kNoAccess, bind(no_bind, a, 8, kAccessRemoteRead, nb));  // C10-73
  EXPECT_EQ(KeyCheck::kNoAccess, bind(ro_bind, a, 8, kAccessRemoteWrite, nb));  // C10-74
  EXPECT_EQ(KeyCheck::kNoAccess, bind(ro_bind, a, 8, kAccessRemoteAtomic, nb));
  EXPECT_EQ(KeyCheck::kBadPd, bind(other_pd_mr, a, 8, kAccessRemoteRead, nb));
  EXPECT_EQ(KeyCheck::kBadPd, bind(mr, a, 8, kAccessRemoteRead, nb, kOtherPd));
  EXPECT_EQ(KeyCheck::kOutOfRange, bind(mr, a + kBufLen - 4, 8, kAccessRemoteRead, nb));
  EXPECT_EQ(KeyCheck::kOutOfRange, bind(mr, a - 1, 8, kAccessRemoteRead, nb));
  EXPECT_EQ(KeyCheck::kOutOfRange, bind(mr, a + 8, UINT64_MAX, kAccessRemoteRead, nb));
  EXPECT_EQ(KeyCheck::kOutOfRange, bind(mr, a, 0, kAccessRemoteRead, nb));  // o10-37.2.40
  EXPECT_EQ(KeyCheck::kNoAccess, bind(mr, a, 8, 0, nb));
  EXPECT_EQ(KeyCheck::kNoAccess, bind(mr, a, 8, kAccessLocalWrite, nb));
  EXPECT_EQ(KeyCheck::kNoAccess, bind(mr, a, 8, kAccessMwBind | kAccessRemoteRead, nb));
  EXPECT_EQ(KeyCheck::kBadKey, bind(mr, a, 8, kAccessRemoteRead, key_byte(mw)));
  EXPECT_EQ(KeyCheck::kBadKey, bind(mw, a, 8, kAccessRemoteRead, nb));  // a window is no region
  EXPECT_EQ(KeyCheck::kBadKey, bind(mr ^ 1, a, 8, kAccessRemoteRead, nb));
  EXPECT_EQ(KeyCheck::kBadKey,
            table.bind_mw(kPd, kQpn, mw ^ 1, mr, a, 8, kAccessRemoteRead, nb, &k));
  EXPECT_EQ(KeyCheck::kBadKey, table.bind_mw(kPd, kQpn, mr, mr, a, 8, kAccessRemoteRead, nb, &k));

  // None of those bound anything; now a good bind, and a second bind of the bound window is
  // refused until it is invalidated (o10-37.2.30).
  ASSERT_EQ(KeyCheck::kOk, bind(mr, a, 8, kAccessRemoteRead, nb));
  uint32_t k2;
  EXPECT_EQ(KeyCheck::kNoAccess,
            table.bind_mw(kPd, kQpn, k, mr, a, 8, kAccessRemoteRead, uint8_t(nb + 1), &k2));
  EXPECT_EQ(KeyCheck::kBadKey, bind(mr, a, 8, kAccessRemoteRead, uint8_t(nb + 1)));  // stale mw
}

TEST_F(MemoryTest, UnboundWindowIsNotAccessible) {
  const uint32_t mw = table.alloc_mw(kPd, 1);
  EXPECT_EQ(KeyCheck::kBadKey, remote(mw, va(buf.data()), 8, kAccessRemoteRead));
  uint64_t ctx;
  EXPECT_EQ(KeyCheck::kInvalidated, table.invalidate_mw(kPd, kQpn, mw, &ctx));
  EXPECT_TRUE(table.dealloc_mw(mw));
  EXPECT_FALSE(table.dealloc_mw(mw));
  // The slot's next allocation gets a different key.
  std::vector<uint32_t> keys;
  for (uint32_t k; (k = table.alloc_mw(kPd, 1)) != 0;) keys.push_back(k);
  EXPECT_EQ(keys.size(), 16u);
  for (uint32_t k : keys) EXPECT_NE(k, mw);
}

TEST_F(MemoryTest, DeregisterRefusedWhileWindowsAreBound) {
  const uint32_t mr = reg(kAccessLocalWrite | kAccessMwBind);
  uint32_t mw1, mw2;
  const uint32_t w1 = bound_window(mr, 0, 64, kAccessRemoteRead, &mw1);
  const uint32_t w2 = bound_window(mr, 64, 64, kAccessRemoteRead, &mw2);
  EXPECT_FALSE(table.deregister_mr(mr));
  EXPECT_EQ(KeyCheck::kOk, local(mr, va(buf.data()), 8));  // refused means untouched
  uint64_t ctx;
  EXPECT_EQ(KeyCheck::kOk, table.invalidate_mw(kPd, kQpn, w1, &ctx));
  EXPECT_FALSE(table.deregister_mr(mr));
  // Deallocating a bound window unbinds it (rxe_mw_cleanup drops the region's count).
  EXPECT_TRUE(table.dealloc_mw(w2));
  EXPECT_EQ(KeyCheck::kBadKey, remote(w2, va(buf.data()) + 64, 8, kAccessRemoteRead));
  EXPECT_TRUE(table.deregister_mr(mr));
  EXPECT_TRUE(table.dealloc_mw(w1));
}

TEST_F(MemoryTest, NamesAreDistinct) {
  const KeyCheck all[] = {KeyCheck::kOk, KeyCheck::kBadKey, KeyCheck::kBadPd, KeyCheck::kBadQp,
                          KeyCheck::kNoAccess, KeyCheck::kOutOfRange, KeyCheck::kInvalidated};
  std::set<std::string> names;
  for (KeyCheck k : all) names.insert(key_check_name(k));
  EXPECT_EQ(names.size(), std::size(all));
  EXPECT_EQ(names.count("unknown"), 0u);
}

TEST(MemoryConcurrency, TwoLcoresNeverBothWinABindOrInvalidate) {
  MemoryTable table;
  ASSERT_TRUE(table.init(4, 4, nullptr));
  std::vector<uint8_t> buf(kBufLen);
  uint32_t mr;
  ASSERT_TRUE(table.register_mr(kPd, buf.data(), buf.size(), kAccessLocalWrite | kAccessMwBind, &mr));
  const uint32_t mw = table.alloc_mw(kPd, 5);
  std::atomic<uint32_t> current{mw};
  std::atomic<unsigned> round{0};
  std::atomic<unsigned> binds{0}, invalidates{0};
  constexpr unsigned kRounds = 20000;
  auto worker = [&](uint8_t salt) {
    for (unsigned r = 0; r < kRounds;) {
      const uint32_t key = current.load();
      uint32_t nk;
      const uint8_t byte = uint8_t(key_byte(key) + 1 + salt);
      if (table.bind_mw(kPd, kQpn, key, mr, reinterpret_cast<uint64_t>(buf.data()), 64,
                        kAccessRemoteRead, byte, &nk) == KeyCheck::kOk) {
        binds++;
        current.store(nk);
      }
      uint64_t ctx;
      if (table.invalidate_mw(kPd, kQpn, current.load(), &ctx) == KeyCheck::kOk) invalidates++;
      r = round.fetch_add(1);
    }
  };
  std::thread t1(worker, 0), t2(worker, 1);
  t1.join();
  t2.join();
  // Every successful bind was matched by at most one invalidation, and the region's count
  // of bound windows came back to what the final state says.
  EXPECT_GE(binds.load(), invalidates.load());
  EXPECT_LE(binds.load() - invalidates.load(), 1u);
  uint64_t ctx;
  table.invalidate_mw(kPd, kQpn, current.load(), &ctx);
  EXPECT_TRUE(table.deregister_mr(mr));
}

// One thread registers and deregisters regions of different position, size, PD and rights
// while a QSBR reader checks the key it last saw: a torn entry would show up as a range, PD
// or rights verdict that belongs to another registration.
struct Published {
  uint32_t key;
  uint16_t off;       ///< region start in the buffer, below 1 << 15
  uint16_t len;       ///< region length, below 1 << 15
  uint32_t pd;        ///< 1 or 2
  bool writable;

  // One word, so the reader never pairs a key with another registration's description.
  uint64_t pack() const {
    return uint64_t(key) | uint64_t(off) << 32 | uint64_t(len) << 47 | uint64_t(pd - 1) << 62 |
           uint64_t(writable) << 63;
  }
  static Published unpack(uint64_t w) {
    return {uint32_t(w), uint16_t(w >> 32 & 0x7fff), uint16_t(w >> 47 & 0x7fff),
            uint32_t(1 + (w >> 62 & 1)), (w >> 63) != 0};
  }
};

TEST(MemoryConcurrency, ReaderNeverSeesATornRegion) {
  constexpr uint32_t kReaders = 1;
  const size_t qsbr_size = (rte_rcu_qsbr_get_memsize(kReaders) + 63) / 64 * 64;
  auto* qsbr = static_cast<rte_rcu_qsbr*>(std::aligned_alloc(64, qsbr_size));
  ASSERT_NE(qsbr, nullptr);
  ASSERT_EQ(0, rte_rcu_qsbr_init(qsbr, kReaders));
  MemoryTable table;
  ASSERT_TRUE(table.init(8, 1, qsbr));
  std::vector<uint8_t> buf(1 << 16);

  std::atomic<uint64_t> published{0};
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> reads{0}, hits{0}, bad{0};

  std::thread reader([&] {
    rte_rcu_qsbr_thread_register(qsbr, 0);
    rte_rcu_qsbr_thread_online(qsbr, 0);
    auto ok_or_gone = [](KeyCheck k) { return k == KeyCheck::kOk || k == KeyCheck::kBadKey; };
    auto is_or_gone = [](KeyCheck k, KeyCheck want) { return k == want || k == KeyCheck::kBadKey; };
    while (!stop.load(std::memory_order_relaxed)) {
      const Published p = Published::unpack(published.load(std::memory_order_acquire));
      if (p.key != 0) {
        const uint64_t base = va(buf.data()) + p.off;
        Resolved r;
        const KeyCheck in = table.check_local(p.pd, p.key, base, p.len, p.writable, &r);
        if (in == KeyCheck::kOk && r.host != buf.data() + p.off) bad++;
        const bool good =
            ok_or_gone(in) &&
            ok_or_gone(table.check_local(p.pd, p.key, base + p.len - 1, 1, false, &r)) &&
            is_or_gone(table.check_local(p.pd, p.key, base - 1, 1, false, &r), KeyCheck::kOutOfRange) &&
            is_or_gone(table.check_local(p.pd, p.key, base + p.len, 1, false, &r), KeyCheck::kOutOfRange) &&
            is_or_gone(table.check_local(3 - p.pd, p.key, base, 1, false, &r), KeyCheck::kBadPd) &&
            (p.writable || is_or_gone(table.check_local(p.pd, p.key, base, 1, true, &r), KeyCheck::kNoAccess));
        if (!good) bad++;
        if (in == KeyCheck::kOk) hits++;
        reads++;
      }
      rte_rcu_qsbr_quiescent(qsbr, 0);
    }
    rte_rcu_qsbr_thread_offline(qsbr, 0);
    rte_rcu_qsbr_thread_unregister(qsbr, 0);
  });

  std::mt19937 rng(3);
  uint32_t prev = 0;
  unsigned cycles = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(1000);
  while (std::chrono::steady_clock::now() < end) {
    Published p;
    p.off = uint16_t(1 + rng() % 30000);
    p.len = uint16_t(1 + rng() % 30000);
    p.pd = 1 + rng() % 2;
    p.writable = rng() % 2;
    ASSERT_TRUE(table.register_mr(p.pd, buf.data() + p.off, p.len,
                                  p.writable ? uint32_t(kAccessLocalWrite) : 0u, &p.key));
    published.store(p.pack(), std::memory_order_release);
    if (prev != 0) {
      ASSERT_TRUE(table.deregister_mr(prev));
    }
    prev = p.key;
    cycles++;
  }
  stop = true;
  reader.join();
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_GT(hits.load(), 100u);
  EXPECT_GT(cycles, 100u);
  std::printf("%u registrations, %llu reads, %llu resolved\n", cycles,
              (unsigned long long)reads.load(), (unsigned long long)hits.load());
  std::free(qsbr);
}


// A peer of another connection must not revoke a window (IBTA: a type-2 window is invalidated
// only through its own QP); the window keeps working for its own QP.
TEST_F(MemoryTest, InvalidateOnlyThroughTheBoundQp) {
  const uint64_t a = va(buf.data());
  const uint32_t mr = reg(kAccessLocalWrite | kAccessMwBind);
  const uint32_t w = bound_window(mr, 0, 128, kAccessRemoteWrite);
  uint64_t ctx = 0;
  EXPECT_EQ(KeyCheck::kBadQp, table.invalidate_mw(kPd, kOtherQpn, w, &ctx));
  EXPECT_EQ(KeyCheck::kOk, remote(w, a, 8, kAccessRemoteWrite));
  EXPECT_EQ(KeyCheck::kOk, table.invalidate_mw(kPd, kQpn, w, &ctx));
  EXPECT_EQ(KeyCheck::kInvalidated, remote(w, a, 8, kAccessRemoteWrite));
}

// The ND frontend names windows by handle: a bind that fails leaves the window bound under its
// old key, and Invalidate and release still reach it, so the region is released and can be
// deregistered (before: the frontend's key went out of step and both failed for ever).
TEST_F(MemoryTest, HandleNamesTheWindowWhateverItsKey) {
  const uint64_t a = va(buf.data());
  const uint32_t mr = reg(kAccessLocalWrite | kAccessMwBind);
  const uint32_t h = table.alloc_mw(kPd, 5);
  uint32_t k1 = 0, k2 = 0;
  ASSERT_EQ(KeyCheck::kOk, table.bind_mw(kPd, kQpn, h, mr, a, 64, kAccessRemoteRead,
                                         uint8_t(key_byte(h) + 3), &k1, MwName::kHandle));
  // A second bind while bound fails and changes nothing.
  EXPECT_EQ(KeyCheck::kNoAccess, table.bind_mw(kPd, kQpn, h, mr, a, 64, kAccessRemoteRead,
                                               uint8_t(key_byte(k1) + 9), &k2, MwName::kHandle));
  EXPECT_EQ(KeyCheck::kOk, remote(k1, a, 8, kAccessRemoteRead));
  EXPECT_FALSE(table.deregister_mr(mr));  // a window is bound to it
  uint64_t ctx = 0;
  EXPECT_EQ(KeyCheck::kOk, table.invalidate_mw(kPd, kQpn, h, &ctx, MwName::kHandle));
  EXPECT_EQ(KeyCheck::kInvalidated, remote(k1, a, 8, kAccessRemoteRead));
  ASSERT_EQ(KeyCheck::kOk, table.bind_mw(kPd, kQpn, h, mr, a, 64, kAccessRemoteRead,
                                         uint8_t(key_byte(k1) + 9), &k2, MwName::kHandle));
  EXPECT_TRUE(table.dealloc_mw(h));  // by handle, while bound under k2
  EXPECT_EQ(KeyCheck::kBadKey, remote(k2, a, 8, kAccessRemoteRead));
  EXPECT_TRUE(table.deregister_mr(mr));  // the window let go of the region
  // A current key is not a handle, and a handle is not the current key once bound.
  const uint32_t h2 = table.alloc_mw(kPd, 6);
  const uint32_t mr2 = reg(kAccessLocalWrite | kAccessMwBind);
  uint32_t k3 = 0;
  ASSERT_EQ(KeyCheck::kOk, table.bind_mw(kPd, kQpn, h2, mr2, a, 64, kAccessRemoteRead,
                                         uint8_t(key_byte(h2) + 1), &k3));
  EXPECT_EQ(KeyCheck::kBadKey, table.invalidate_mw(kPd, kQpn, k3, &ctx, MwName::kHandle));
  EXPECT_EQ(KeyCheck::kBadKey, table.invalidate_mw(kPd, kQpn, h2, &ctx));
}

// A destroyed QP's windows die with it; windows of other QPs live on.
TEST_F(MemoryTest, InvalidateBoundToOneQp) {
  const uint64_t a = va(buf.data());
  const uint32_t mr = reg(kAccessLocalWrite | kAccessMwBind);
  const uint32_t w1 = bound_window(mr, 0, 64, kAccessRemoteRead);
  const uint32_t w2 = bound_window(mr, 64, 64, kAccessRemoteRead);
  const uint32_t mw3 = table.alloc_mw(kPd, 3);
  uint32_t w3 = 0;
  ASSERT_EQ(KeyCheck::kOk, table.bind_mw(kPd, kOtherQpn, mw3, mr, a + 128, 64, kAccessRemoteRead,
                                         uint8_t(key_byte(mw3) + 1), &w3));
  EXPECT_EQ(2u, table.invalidate_bound_to(kQpn));
  EXPECT_EQ(KeyCheck::kInvalidated, remote(w1, a, 8, kAccessRemoteRead));
  EXPECT_EQ(KeyCheck::kInvalidated, remote(w2, a + 64, 8, kAccessRemoteRead));
  EXPECT_EQ(KeyCheck::kOk, remote(w3, a + 128, 8, kAccessRemoteRead, kOtherQpn));
  EXPECT_EQ(0u, table.invalidate_bound_to(kQpn));
}

// Keys a peer saw say nothing of the next ones: a slot's key byte never repeats from one
// registration to the next, and slots are not handed out in index order.
TEST_F(MemoryTest, KeysAreNotPredictable) {
  unsigned byte_plus_one = 0;
  uint32_t prev = reg(kAccessLocalWrite);
  for (int i = 0; i < 64; i++) {
    ASSERT_TRUE(table.deregister_mr(prev));
    // 16 slots, FIFO reuse: deregister and register until the same slot comes back.
    uint32_t key = reg(kAccessLocalWrite);
    std::vector<uint32_t> others;
    while (key_index(key) != key_index(prev)) {
      others.push_back(key);
      key = reg(kAccessLocalWrite);
    }
    EXPECT_NE(key_byte(key), key_byte(prev));
    byte_plus_one += key_byte(key) == uint8_t(key_byte(prev) + 1);
    for (uint32_t k : others) ASSERT_TRUE(table.deregister_mr(k));
    prev = key;
  }
  EXPECT_LT(byte_plus_one, 8u) << "key bytes step by one";
  unsigned steps_of_one = 0;
  std::vector<uint32_t> idx;
  MemoryTable fresh;
  ASSERT_TRUE(fresh.init(64, 64, nullptr));
  for (int i = 0; i < 16; i++) idx.push_back(key_index(fresh.alloc_mw(kPd, 0)));
  for (size_t i = 1; i < idx.size(); i++) steps_of_one += idx[i] == idx[i - 1] + 1;
  EXPECT_LT(steps_of_one, 8u) << "window slots come out in index order";
}


// Two application threads register, deregister, allocate and free windows at once (several
// connections' set-up in parallel): no slot is handed out twice, so no two live keys share an
// index, and every slot comes back (before: the free lists were not safe for two writers).
TEST(MemoryConcurrency, TwoApplicationThreadsShareTheTables) {
  constexpr uint32_t kSlots = 64;
  MemoryTable table;
  ASSERT_TRUE(table.init(kSlots, kSlots, nullptr));
  std::vector<uint8_t> mem(4096);
  std::atomic<uint32_t> owner[2 * kSlots + 1] = {};  // index -> thread holding it (1-based), 0 none
  std::atomic<unsigned> clashes{0}, failures{0};
  std::atomic<int> ready{0};
  auto work = [&](uint32_t me) {
    std::vector<uint32_t> mine;
    ready++;
    while (ready.load() < 2) {}  // both at once, not one after the other
    for (int i = 0; i < 200000; i++) {
      if (mine.size() < kSlots / 4 && i % 3 != 2) {
        uint32_t key = 0;
        if (i % 2) {
          if (!table.register_mr(kPd, mem.data(), mem.size(), kAccessLocalWrite, &key)) continue;
        } else if ((key = table.alloc_mw(kPd, 0)) == 0) {
          continue;
        }
        const uint32_t slot = is_mw_key(key) ? kSlots + key_index(key) - kMwKeyBase : key_index(key) - 1;
        uint32_t none = 0;
        if (!owner[slot].compare_exchange_strong(none, me)) clashes++;
        mine.push_back(key);
      } else if (!mine.empty()) {
        const uint32_t key = mine.back();
        mine.pop_back();
        const uint32_t slot = is_mw_key(key) ? kSlots + key_index(key) - kMwKeyBase : key_index(key) - 1;
        owner[slot].store(0);
        if (!(is_mw_key(key) ? table.dealloc_mw(key) : table.deregister_mr(key))) failures++;
      }
    }
    for (uint32_t key : mine) {
      const uint32_t slot = is_mw_key(key) ? kSlots + key_index(key) - kMwKeyBase : key_index(key) - 1;
      owner[slot].store(0);
      if (!(is_mw_key(key) ? table.dealloc_mw(key) : table.deregister_mr(key))) failures++;
    }
  };
  std::thread t1(work, 1), t2(work, 2);
  t1.join();
  t2.join();
  EXPECT_EQ(clashes.load(), 0u) << "a slot was handed to both threads at once";
  EXPECT_EQ(failures.load(), 0u);
  // Every slot is free again: all of them can be taken once more.
  for (uint32_t i = 0; i < kSlots; i++) {
    uint32_t key = 0;
    EXPECT_TRUE(table.register_mr(kPd, mem.data(), mem.size(), 0, &key)) << i;
    EXPECT_NE(table.alloc_mw(kPd, 0), 0u) << i;
  }
}

}  // namespace
}  // namespace ndnic::nic
