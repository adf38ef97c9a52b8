// The server serves: it keeps receives posted and checks, in order, every message that
// consumes one, and through them the memory the client's WRITEs and atomics changed.
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "tests/nic/xproc/peer.h"

namespace ndnic::nic::xproc {
namespace {

constexpr int kVerdictMs = 30000;
constexpr unsigned kChannelCheckEvery = 1024;  ///< polls between looks at the side channel

/// One message the server expects to consume a receive, and what to check when it does.
struct Expect {
  enum Kind { kSend, kBulkDone, kImm, kAtomicsDone, kMixed } kind;
  uint32_t index;  ///< message number within its phase
  uint32_t len;
};

std::vector<Expect> directed_expectations() {
  std::vector<Expect> e;
  const std::vector<uint32_t> sizes = send_sizes();
  for (uint32_t i = 0; i < sizes.size(); i++) e.push_back({Expect::kSend, i, sizes[i]});
  e.push_back({Expect::kBulkDone, 0, 0});
  for (uint32_t j = 0; j < std::size(kImmSizes); j++) e.push_back({Expect::kImm, j, kImmSizes[j]});
  e.push_back({Expect::kAtomicsDone, 4, kAtomicsDoneLen});
  return e;
}

std::vector<Expect> mixed_expectations(const std::vector<Msg>& plan) {
  std::vector<Expect> e;
  for (uint32_t i = 0; i < plan.size(); i++)
    if (consumes_receive(plan[i].op)) e.push_back({Expect::kMixed, i, plan[i].len});
  return e;
}

class Server {
 public:
  Server(Peer& p, SideChannel& ch) : p_(p), ch_(ch), plan_(mixed_plan()) {}
  bool run();

 private:
  struct QpState {
    std::vector<Expect> expect;
    size_t next = 0;
    uint64_t posted = 0;
    uint32_t next_write = 0;  ///< mixed run: the first plain WRITE not checked yet
  };
  bool post_recvs(uint32_t q);
  bool check(uint32_t q, const Completion& c);
  bool check_mixed(const Expect& e, const Completion& c, const uint8_t* slot);
  bool bytes(const char* what, uint32_t index, const uint8_t* p, uint32_t len, uint32_t seed, uint32_t msg,
             uint32_t from = 0);

  Peer& p_;
  SideChannel& ch_;
  std::vector<Msg> plan_;
  QpState qs_[kQps];
  uint64_t fetch_adds_ = 0;
};

bool Server::bytes(const char* what, uint32_t index, const uint8_t* p, uint32_t len, uint32_t seed,
                   uint32_t msg, uint32_t from) {
  const int64_t bad = mismatch(p, len, seed, msg, from);
  return bad < 0 || p_.fail(std::string(what) + " " + std::to_string(index) + ": byte " + std::to_string(bad) +
                            " of " + std::to_string(len) + " differs");
}

// Keeps kSlots receives posted; a slot is reposted only after its message was checked.
bool Server::post_recvs(uint32_t q) {
  QpState& s = qs_[q];
  const uint64_t done = s.next;
  while (s.posted < s.expect.size() && s.posted - done < kSlots) {
    if (!p_.qp(q)->post_recv(p_.recv_wr(q, kSlotArea + (s.posted % kSlots) * kSlot, kSlot, s.posted)))
      return p_.fail("post_recv refused");
    s.posted++;
  }
  return true;
}

bool Server::check(uint32_t q, const Completion& c) {
  QpState& s = qs_[q];
  const std::string where = "QP " + std::to_string(q) + " receive " + std::to_string(s.next);
  if (c.status != WcStatus::kSuccess) return p_.fail(where + ": " + wc_status_name(c.status));
  if (c.wr_id != s.next) return p_.fail(where + ": completion for receive " + std::to_string(c.wr_id));
  if (s.next >= s.expect.size()) return p_.fail(where + ": more messages than the client sends");
  const Expect& e = s.expect[s.next++];
  if (c.byte_len != e.len)
    return p_.fail(where + ": byte_len " + std::to_string(c.byte_len) + ", expected " + std::to_string(e.len));
  const bool want_imm = e.kind == Expect::kBulkDone || e.kind == Expect::kImm ||
                        (e.kind == Expect::kMixed && plan_[e.index].op == WrOpcode::kWriteImm);
  if (want_imm != (c.opcode == WcOpcode::kRecvWriteImm) || want_imm != bool(c.flags & kWcWithImm))
    return p_.fail(where + ": wrong opcode or immediate flag");
  const uint8_t* slot = p_.mem(q, kSlotArea + (c.wr_id % kSlots) * kSlot);
  switch (e.kind) {
    case Expect::kSend:
      return bytes("SEND", e.index, slot, e.len, seed_for(kSendSeed, q), e.index);
    case Expect::kBulkDone:
      if (c.imm_or_inv != kBulkDoneImm + q) return p_.fail(where + ": wrong immediate");
      return bytes("1 MiB WRITE", 0, p_.mem(q, kBulkArea), kBulk, seed_for(kBulkSeed, q), 0);
    case Expect::kImm:
      if (c.imm_or_inv != kImmBase + e.index) return p_.fail(where + ": wrong immediate");
      return bytes("WRITE WITH IMMEDIATE", e.index, p_.mem(q, kImmArea + e.index * kSlot), e.len,
                   seed_for(kImmSeed, q), e.index);
    case Expect::kAtomicsDone: {
      uint64_t cas, faa;
      std::memcpy(&cas, p_.mem(q, kCasWord), 8);
      std::memcpy(&faa, p_.mem(q, kFaaWord), 8);
      if (cas != kCasSwap || faa != kFaaInitial + kFaaAdd[0] + kFaaAdd[1]) {
        char why[160];
        std::snprintf(why, sizeof why, "QP %u atomics left 0x%" PRIx64 " and %" PRIu64 ", expected 0x%" PRIx64
                      " and %" PRIu64, q, cas, faa, kCasSwap, kFaaInitial + kFaaAdd[0] + kFaaAdd[1]);
        return p_.fail(why);
      }
      return bytes("SEND after atomics", e.index, slot, e.len, seed_for(kSendSeed, q), e.index);
    }
    case Expect::kMixed:
      return check_mixed(e, c, slot);
  }
  return false;
}

// Messages before this one ran first (RC ordering), so the plain WRITEs since the previous
// receive have landed; each WRITE slot is reused only kMixedWriteSlots messages later.
bool Server::check_mixed(const Expect& e, const Completion& c, const uint8_t* slot) {
  constexpr uint32_t q = kMixedQp;
  QpState& s = qs_[q];
  for (; s.next_write < e.index; s.next_write++) {
    const Msg& m = plan_[s.next_write];
    if (m.op == WrOpcode::kFetchAdd) fetch_adds_++;
    if (m.op != WrOpcode::kWrite) continue;
    const uint8_t* at = p_.mem(q, kBulkArea + (s.next_write % kMixedWriteSlots) * kMixedMax);
    if (!bytes("mixed WRITE", s.next_write, at, m.len, kMixedSeed, s.next_write)) return false;
  }
  s.next_write = e.index + 1;
  const Msg& m = plan_[e.index];
  if (m.op == WrOpcode::kWriteImm) {
    if (c.imm_or_inv != e.index) return p_.fail("mixed WRITE WITH IMMEDIATE " + std::to_string(e.index) + ": wrong immediate");
    slot = p_.mem(q, kBulkArea + (e.index % kMixedWriteSlots) * kMixedMax);
  }
  if (!bytes("mixed message", e.index, slot, e.len, kMixedSeed, e.index)) return false;
  if (e.index + 1 == plan_.size()) {  // the last message: every fetch-and-add ran before it
    uint64_t counter;
    std::memcpy(&counter, p_.mem(q, kMixedCounter), 8);
    if (counter != fetch_adds_)
      return p_.fail("mixed run: the counter is " + std::to_string(counter) + " after " +
                     std::to_string(fetch_adds_) + " fetch-and-adds (one ran twice or not at all)");
  }
  return true;
}

bool Server::run() {
  for (uint32_t q = 0; q < kQps; q++) {
    qs_[q].expect = q == kMixedQp ? mixed_expectations(plan_) : directed_expectations();
    const uint64_t cas = kCasInitial, faa = kFaaInitial;
    std::memcpy(p_.mem(q, kCasWord), &cas, 8);
    std::memcpy(p_.mem(q, kFaaWord), &faa, 8);
    if (!post_recvs(q)) return false;
  }
  fill(p_.mem(kMixedQp, kReadArea), kBulk, kReadSeed, 0);

  std::string line;
  bool client_done = false;
  unsigned spins = 0;
  size_t total = 0;
  for (uint32_t q = 0; q < kQps; q++) total += qs_[q].expect.size();
  for (size_t checked = 0; checked < total;) {
    p_.poll();
    for (uint32_t q = 0; q < kQps; q++) {
      Completion c[64];
      for (unsigned k = p_.rcq(q)->poll(c, 64), j = 0; j < k; j++, checked++)
        if (!check(q, c[j])) return false;
      if (!post_recvs(q)) return false;
    }
    if (++spins % kChannelCheckEvery != 0 || client_done) continue;
    // The client may finish (its SENDs are ACKed) before we have polled the last receives.
    if (ch_.try_receive(&line)) {
      if (line != "done") return p_.fail("the client says, " + std::to_string(checked) + " messages in: " + line);
      client_done = true;
    } else if (ch_.closed()) {
      return p_.fail("the client hung up after " + std::to_string(checked) + " messages");
    }
  }
  std::printf("server: %zu received messages checked: payloads, immediates, WRITEs, atomics\n", total);
  // Keep answering (ACKs, READ responses) until the client has all its completions.
  if (!client_done && !ch_.receive(&line, p_.idle(), kVerdictMs)) return p_.fail("no word from the client: " + ch_.error());
  if (!client_done && line != "done") return p_.fail("the client says: " + line);
  return ch_.send("result ok") || p_.fail("cannot send the verdict: " + ch_.error());
}

}  // namespace

bool run_server(Peer& p, SideChannel& ch) { return Server(p, ch).run(); }

}  // namespace ndnic::nic::xproc
