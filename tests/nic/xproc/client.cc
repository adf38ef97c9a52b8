// The client drives every phase and checks what comes back to it: completions in order and
// successful, READ data, atomics' original values. The server checks what lands in its memory.
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "tests/nic/xproc/peer.h"

namespace ndnic::nic::xproc {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kPhaseMs = 20000;
constexpr unsigned kChannelCheckEvery = 4096;  ///< polls between looks for a server failure

using Make = std::function<SendWr(uint32_t i)>;
using Check = std::function<bool(uint32_t i, const Completion& c)>;

class Client {
 public:
  Client(Peer& p, SideChannel& ch, uint32_t bulk_pieces) : p_(p), ch_(ch), bulk_pieces_(bulk_pieces) {}
  bool run();

 private:
  bool pipeline(const char* phase, uint32_t q, uint32_t n, uint32_t window, const Make& make, const Check& check);
  SendWr wr(WrOpcode op, uint32_t q, uint64_t local_off, uint32_t len, uint64_t remote_off, uint64_t wr_id);
  bool sends(uint32_t q);
  bool bulk(uint32_t q);
  bool write_imm(uint32_t q);
  bool atomics(uint32_t q);
  bool mixed();

  Peer& p_;
  SideChannel& ch_;
  uint32_t bulk_pieces_;
  uint64_t messages_ = 0;
};

SendWr Client::wr(WrOpcode op, uint32_t q, uint64_t local_off, uint32_t len, uint64_t remote_off, uint64_t wr_id) {
  SendWr w{};
  w.wr_id = wr_id;
  w.opcode = op;
  w.flags = kWrSignaled;
  w.num_sge = len > 0 ? 1 : 0;
  w.sge[0] = p_.sge(q, local_off, len);
  w.remote_addr = p_.remote().addr + q * kRegion + remote_off;
  w.rkey = p_.remote().rkey;
  return w;
}

bool Client::pipeline(const char* phase, uint32_t q, uint32_t n, uint32_t window, const Make& make,
                      const Check& check) {
  const auto t0 = Clock::now();
  uint32_t posted = 0, done = 0;
  unsigned spins = 0;
  std::string line;
  while (done < n) {
    while (posted < n && posted - done < window)
      if (!p_.qp(q)->post_send(make(posted++))) return p_.fail(std::string(phase) + ": post_send refused");
    p_.poll();
    Completion c[64];
    for (unsigned k = p_.scq(q)->poll(c, 64), j = 0; j < k; j++, done++) {
      if (c[j].status != WcStatus::kSuccess)
        return p_.fail(std::string(phase) + ": request " + std::to_string(c[j].wr_id) + " failed: " +
                       wc_status_name(c[j].status));
      if (c[j].wr_id != done)
        return p_.fail(std::string(phase) + ": completion " + std::to_string(c[j].wr_id) + " where " +
                       std::to_string(done) + " was due (out of order or repeated)");
      if (!check(done, c[j])) return false;
    }
    if (++spins % kChannelCheckEvery == 0) {
      if (ch_.try_receive(&line)) return p_.fail(std::string(phase) + ": the server says: " + line);
      if (ch_.closed()) return p_.fail(std::string(phase) + ": the server hung up");
      if (Clock::now() - t0 > std::chrono::milliseconds(kPhaseMs))
        return p_.fail(std::string(phase) + ": " + std::to_string(done) + " of " + std::to_string(n) +
                       " completions after " + std::to_string(kPhaseMs) + " ms");
    }
  }
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  std::printf("client: QP %u %s: %u requests, %.1f ms\n", q, phase, n, ms);
  messages_ += n;
  return true;
}

// (1) SENDs of every size class; the server checks each payload.
bool Client::sends(uint32_t q) {
  const std::vector<uint32_t> sizes = send_sizes();
  const auto make = [&](uint32_t i) {
    const uint64_t off = kSlotArea + (i % kSlots) * kSlot;  // the window is smaller than kSlots
    fill(p_.mem(q, off), sizes[i], seed_for(kSendSeed, q), i);
    return wr(WrOpcode::kSend, q, off, sizes[i], 0, i);
  };
  return pipeline("SEND", q, uint32_t(sizes.size()), 16, make, [](uint32_t, const Completion&) { return true; });
}

// (2) 1 MiB WRITE (one message unless --bulk-pieces splits it, as the READ), a zero-length WRITE WITH IMMEDIATE that tells the server it has landed (RC
// ordering), then a READ of the same range.
bool Client::bulk(uint32_t q) {
  fill(p_.mem(q, kBulkArea), kBulk, seed_for(kBulkSeed, q), 0);
  const uint32_t piece = kBulk / bulk_pieces_;
  const auto make = [&](uint32_t i) {
    if (i < bulk_pieces_) return wr(WrOpcode::kWrite, q, kBulkArea + i * piece, piece, kBulkArea + i * piece, i);
    SendWr w = wr(WrOpcode::kWriteImm, q, 0, 0, kBulkArea, i);
    w.imm = kBulkDoneImm + q;
    return w;
  };
  const auto ok = [](uint32_t, const Completion&) { return true; };
  if (!pipeline("WRITE 1 MiB + notify", q, bulk_pieces_ + 1, bulk_pieces_ + 1, make, ok)) return false;

  std::memset(p_.mem(q, kReadArea), 0, kBulk);
  const auto read = [&](uint32_t i) {
    return wr(WrOpcode::kRead, q, kReadArea + i * piece, piece, kBulkArea + i * piece, i);
  };
  const auto compare = [&](uint32_t i, const Completion& c) {
    if (c.byte_len != piece) return p_.fail("READ: byte_len " + std::to_string(c.byte_len));
    if (i + 1 < bulk_pieces_) return true;
    const int64_t bad = mismatch(p_.mem(q, kReadArea), kBulk, seed_for(kBulkSeed, q), 0);
    return bad < 0 || p_.fail("READ 1 MiB: byte " + std::to_string(bad) + " differs from what was written");
  };
  return pipeline("READ 1 MiB back", q, bulk_pieces_, bulk_pieces_, read, compare);
}

// (3) WRITE WITH IMMEDIATE of several sizes; the server checks data, length and immediate.
bool Client::write_imm(uint32_t q) {
  const auto make = [&](uint32_t j) {
    const uint64_t off = kImmArea + j * kSlot;
    fill(p_.mem(q, off), kImmSizes[j], seed_for(kImmSeed, q), j);
    SendWr w = wr(WrOpcode::kWriteImm, q, off, kImmSizes[j], off, j);
    w.imm = kImmBase + j;
    return w;
  };
  return pipeline("WRITE WITH IMMEDIATE", q, std::size(kImmSizes), std::size(kImmSizes), make,
                  [](uint32_t, const Completion&) { return true; });
}

// (4) A compare-and-swap that swaps, one that must not, two fetch-and-adds; then a SEND after
// which the server checks its words (the responder ran the atomics first: RC ordering).
bool Client::atomics(uint32_t q) {
  struct Atomic {
    WrOpcode op;
    uint64_t remote, compare_add, swap, expect;
  };
  const Atomic ops[] = {
      {WrOpcode::kCompareSwap, kCasWord, kCasInitial, kCasSwap, kCasInitial},
      {WrOpcode::kCompareSwap, kCasWord, kCasInitial, 0, kCasSwap},
      {WrOpcode::kFetchAdd, kFaaWord, kFaaAdd[0], 0, kFaaInitial},
      {WrOpcode::kFetchAdd, kFaaWord, kFaaAdd[1], 0, kFaaInitial + kFaaAdd[0]},
  };
  constexpr uint32_t kOps = std::size(ops);
  const auto make = [&](uint32_t i) {
    if (i == kOps) {
      fill(p_.mem(q, kSlotArea), kAtomicsDoneLen, seed_for(kSendSeed, q), i);
      return wr(WrOpcode::kSend, q, kSlotArea, kAtomicsDoneLen, 0, i);
    }
    SendWr w = wr(ops[i].op, q, kAtomicResults + 8 * i, 8, ops[i].remote, i);
    w.compare_add = ops[i].compare_add;
    w.swap = ops[i].swap;
    return w;
  };
  const auto check = [&](uint32_t i, const Completion&) {
    if (i == kOps) return true;
    uint64_t got;
    std::memcpy(&got, p_.mem(q, kAtomicResults + 8 * i), 8);
    if (got == ops[i].expect) return true;
    char why[128];
    std::snprintf(why, sizeof why, "atomic %u returned 0x%" PRIx64 ", expected 0x%" PRIx64, i, got, ops[i].expect);
    return p_.fail(why);
  };
  return pipeline("atomics", q, kOps + 1, kOps + 1, make, check);
}

// (5) The mixed run of tests/nic/fault_test.cc: exactly once and in order, faults or not.
bool Client::mixed() {
  constexpr uint32_t q = kMixedQp;
  const std::vector<Msg> plan = mixed_plan();
  uint64_t fetch_adds = 0;
  const auto make = [&](uint32_t i) {
    const Msg& m = plan[i];
    const uint64_t slot = i % kSlots;
    if (m.op == WrOpcode::kRead) {
      std::memset(p_.mem(q, kReadArea + slot * kMixedMax), 0, m.len);
      return wr(m.op, q, kReadArea + slot * kMixedMax, m.len, kReadArea + mixed_read_offset(i), i);
    }
    if (m.op == WrOpcode::kFetchAdd) {
      SendWr w = wr(m.op, q, kAtomicResults + slot * 8, 8, kMixedCounter, i);
      w.compare_add = 1;
      return w;
    }
    fill(p_.mem(q, kSlotArea + slot * kSlot), m.len, kMixedSeed, i);
    SendWr w = wr(m.op, q, kSlotArea + slot * kSlot, m.len, kBulkArea + (i % kMixedWriteSlots) * kMixedMax, i);
    w.imm = i;
    return w;
  };
  const auto check = [&](uint32_t i, const Completion& c) {
    const Msg& m = plan[i];
    const uint64_t slot = i % kSlots;
    if (m.op == WrOpcode::kRead) {
      if (c.byte_len != m.len) return p_.fail("mixed READ " + std::to_string(i) + ": byte_len " + std::to_string(c.byte_len));
      const int64_t bad = mismatch(p_.mem(q, kReadArea + slot * kMixedMax), m.len, kReadSeed, 0, uint32_t(mixed_read_offset(i)));
      if (bad >= 0) return p_.fail("mixed READ " + std::to_string(i) + ": byte " + std::to_string(bad) + " differs");
    } else if (m.op == WrOpcode::kFetchAdd) {
      uint64_t got;
      std::memcpy(&got, p_.mem(q, kAtomicResults + slot * 8), 8);
      if (got != fetch_adds)
        return p_.fail("mixed fetch-and-add " + std::to_string(i) + " returned " + std::to_string(got) +
                       ", expected " + std::to_string(fetch_adds) + " (ran twice or was lost)");
      fetch_adds++;
    }
    return true;
  };
  return pipeline("mixed", q, kMixedMessages, kMixedInFlight, make, check);
}

bool Client::run() {
  const auto t0 = Clock::now();
  for (uint32_t q = 0; q < kMixedQp; q++)
    if (!sends(q) || !bulk(q) || !write_imm(q) || !atomics(q)) return false;
  if (!mixed()) return false;
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("client: %" PRIu64 " requests checked in %.2f s\n", messages_, secs);
  // The server answers once it has checked everything that landed in its memory.
  std::string line;
  if (!ch_.send("done") || !ch_.receive(&line, p_.idle(), kPhaseMs))
    return p_.fail("no verdict from the server: " + ch_.error());
  if (line != "result ok") return p_.fail("the server says: " + line);
  return true;
}

}  // namespace

bool run_client(Peer& p, SideChannel& ch, uint32_t bulk_pieces) { return Client(p, ch, bulk_pieces).run(); }

}  // namespace ndnic::nic::xproc
