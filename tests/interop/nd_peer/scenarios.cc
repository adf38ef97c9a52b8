#include "tests/interop/nd_peer/scenarios.h"

#include <endian.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "tests/interop/nd_peer/checks.h"
#include "tools/nd_app/node.h"
#include "tools/nd_app/status.h"
#include "tools/nd_app/waits.h"

namespace ndnic::nd_peer {
namespace {

using Clock = std::chrono::steady_clock;
using nd_app::status_text;

constexpr auto kRnrxLinger = std::chrono::milliseconds(3500);  // > the receiver's 2 s + 1 s watch

long long ms_since(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
}

/// Posts through `post` (which fills `r`), waits, checks the status.
template <typename Post>
bool run_op(Peer& p, const std::string& what, HRESULT expected, Post post) {
  ND_RESULT r{};
  if (!p.posted(what, post(&r))) return false;
  if (!p.wait(&r)) {
    fail(what, "no result in " + std::to_string(kWaitMs) + " ms", status_text(expected));
    return false;
  }
  check_status(what, r.Status, expected);
  return r.Status == expected;
}

/// Binds `mw` over [at, at + len) of the buffer; `d` the descriptor for the peer.
bool bind(Peer& p, INDMemoryWindow* mw, uint8_t* at, size_t len, DWORD flags, ND_MW_DESCRIPTOR* d) {
  return run_op(p, "Bind a window over " + std::to_string(len) + " bytes", ND_SUCCESS,
                [&](ND_RESULT* r) { return p.ep()->Bind(r, p.mr(), mw, at, len, flags, d); });
}

struct Window {
  ND_RESULT invalidated{};
  INDMemoryWindow* mw = nullptr;
  explicit Window(Peer& p) {
    if (FAILED(p.adapter()->CreateMemoryWindow(&invalidated, &mw))) mw = nullptr;
    invalidated.Status = ND_PENDING;  // completed only by the peer's SendAndInvalidate
  }
  ~Window() {
    if (mw) mw->Release();
  }
};

// ---- mw ----------------------------------------------------------------------------------------

void mw_owner(Peer& p) {
  Window w(p);
  if (!w.mw) return fail("CreateMemoryWindow", "an error", "a window");
  uint8_t* win = p.area() + 4096;
  fill_pattern(win, 8192, 1);
  ND_MW_DESCRIPTOR d{};
  if (!bind(p, w.mw, win, 8192, ND_OP_FLAG_ALLOW_READ | ND_OP_FLAG_ALLOW_WRITE, &d) || !p.send_ctl(Ctl::kWindow, &d))
    return;
  const size_t before = p.inbound_order().size();
  NDNIC_RESULT* r = p.next_recv("SendAndInvalidate's receive");
  if (r) {
    check_status("the window's invalidate result", w.invalidated.Status, ND_SUCCESS);
    // ND v1: the invalidate result first, then the receive.
    const auto& order = p.inbound_order();
    size_t inv_at = order.size(), recv_at = order.size();
    for (size_t i = before; i < order.size(); i++) {
      if (order[i] == &w.invalidated) inv_at = i;
      if (order[i] == r) recv_at = i;
    }
    if (inv_at < recv_at)
      ok("the invalidate result came before the receive");
    else
      fail("result order", inv_at == order.size() ? "no invalidate result" : "the receive first",
           "the invalidate result, then the receive");
    check_status("SendAndInvalidate's receive", r->Status, ND_SUCCESS);
    check_u64("SendAndInvalidate's receive: bytes", r->BytesTransferred, 16);
    if (is_pattern(p.data_of(r), 16, 3))
      ok("SendAndInvalidate's payload");
    else
      fail("SendAndInvalidate's payload", "other bytes", "pattern 3");
    check_u64("receive flags: NDNIC_RESULT_INVALIDATED", r->Flags & NDNIC_RESULT_INVALIDATED, NDNIC_RESULT_INVALIDATED);
    check_u64("receive: InvalidatedToken is the window's", r->InvalidatedToken, d.Token);
    p.post_slot(p.slot_of(r));
  }
  if (is_pattern(win, 2048, 2))
    ok("the peer's 2 KiB WRITE landed in the window");
  else
    fail("WRITE through the window", "other bytes", "pattern 2");
  if (is_pattern(win + 2048, 6144, 1, 2048))
    ok("the rest of the window is untouched");
  else
    fail("window past the WRITE", "other bytes", "pattern 1");
  if (!p.send_ctl(Ctl::kGo)) return;
  p.expect_flushed("owner after the access through the invalidated token");
}

void mw_accessor(Peer& p) {
  ND_MW_DESCRIPTOR d{};
  if (!p.recv_ctl(Ctl::kWindow, &d)) return;
  uint8_t* local = p.area();
  fill_pattern(local, 2048, 2);
  ND_SGE w{local, 2048, p.mr()};
  run_op(p, "Write 2 KiB into the window", ND_SUCCESS, [&](ND_RESULT* r) { return p.ep()->Write(r, &w, 1, &d, 0, 0); });
  uint8_t* back = p.area() + 8192;
  std::memset(back, 0, 4096);
  ND_SGE rd{back, 4096, p.mr()};
  if (run_op(p, "Read 4 KiB from the window", ND_SUCCESS,
             [&](ND_RESULT* r) { return p.ep()->Read(r, &rd, 1, &d, 0, 0); })) {
    if (is_pattern(back, 2048, 2) && is_pattern(back + 2048, 2048, 1, 2048))
      ok("Read returns what was written, then the owner's bytes");
    else
      fail("Read contents", "other bytes", "pattern 2 then pattern 1");
  }
  uint8_t* msg = p.send_area() + 4096;
  fill_pattern(msg, 16, 3);
  ND_SGE s{msg, 16, p.mr()};
  run_op(p, "SendAndInvalidate", ND_SUCCESS, [&](ND_RESULT* r) { return p.ep()->SendAndInvalidate(r, &s, 1, &d, 0); });
  if (!p.recv_ctl(Ctl::kGo)) return;
  ND_SGE w2{local, 64, p.mr()};
  run_op(p, "Write through the invalidated token", ND_REMOTE_ERROR,
         [&](ND_RESULT* r) { return p.ep()->Write(r, &w2, 1, &d, 0, 0); });
  p.expect_flushed("accessor after its remote access error");
}

// ---- imm ---------------------------------------------------------------------------------------

void imm_receiver(Peer& p) {
  Window w(p);
  if (!w.mw) return fail("CreateMemoryWindow", "an error", "a window");
  uint8_t* win = p.area();
  ND_MW_DESCRIPTOR d{};
  if (!bind(p, w.mw, win, 16384, ND_OP_FLAG_ALLOW_WRITE, &d) || !p.send_ctl(Ctl::kWindow, &d)) return;
  for (unsigned k = 0; k < 2 * kImmCount; k++) {
    const bool write = k >= kImmCount;
    const unsigned i = k % kImmCount;
    const uint32_t len = kImmSizes[i], imm = (write ? kImmWriteTag : kImmSendTag) | len;
    const std::string what =
        std::string(write ? "WriteWithImmediate " : "SendWithImmediate ") + std::to_string(len) + " bytes";
    NDNIC_RESULT* r = p.next_recv(what);
    if (!r) return;
    if (r->Status != ND_SUCCESS) return fail(what, status_text(r->Status), "ND_SUCCESS");
    bool good = true;
    const DWORD want = NDNIC_RESULT_IMMEDIATE | (write ? NDNIC_RESULT_WRITE : 0);
    if ((r->Flags & (NDNIC_RESULT_IMMEDIATE | NDNIC_RESULT_WRITE)) != want) {
      fail(what, "Flags " + hex(r->Flags), "Flags " + hex(want));
      good = false;
    } else if (r->ImmediateData != imm) {
      fail(what, "ImmediateData " + hex(r->ImmediateData), hex(imm));
      good = false;
    }
    if (r->BytesTransferred != len) {
      fail(what, "BytesTransferred " + std::to_string(r->BytesTransferred), std::to_string(len));
      good = false;
    }
    const uint8_t* data = write ? win + imm_offset(i) : p.data_of(r);
    if (!is_pattern(data, len, 10 + k)) {
      fail(what, "other bytes", "pattern " + std::to_string(10 + k));
      good = false;
    }
    if (good) ok(what + ": kind, length, immediate " + hex(imm) + ", bytes");
    p.post_slot(p.slot_of(r));
  }
  p.send_ctl(Ctl::kDone);
}

void imm_sender(Peer& p) {
  ND_MW_DESCRIPTOR d{};
  if (!p.recv_ctl(Ctl::kWindow, &d)) return;
  for (unsigned k = 0; k < 2 * kImmCount; k++) {
    const bool write = k >= kImmCount;
    const unsigned i = k % kImmCount;
    const uint32_t len = kImmSizes[i], imm = (write ? kImmWriteTag : kImmSendTag) | len;
    uint8_t* src = p.area() + 4096 * (k % 8);
    fill_pattern(src, len, 10 + k);
    ND_SGE s{src, len, p.mr()};
    const ND_SGE* sgl = len ? &s : nullptr;
    const SIZE_T n = len ? 1 : 0;
    const std::string what =
        std::string(write ? "WriteWithImmediate " : "SendWithImmediate ") + std::to_string(len) + " bytes completes";
    run_op(p, what, ND_SUCCESS, [&](ND_RESULT* r) {
      return write ? p.ext()->WriteWithImmediate(r, sgl, n, &d, imm_offset(i), imm, 0)
                   : p.ext()->SendWithImmediate(r, sgl, n, imm, 0);
    });
  }
  if (p.recv_ctl(Ctl::kDone)) ok("the receiver checked every message");
}

// ---- atomic ------------------------------------------------------------------------------------

void atomic_target(Peer& p) {
  Window w(p);
  if (!w.mw) return fail("CreateMemoryWindow", "an error", "a window");
  auto* target = reinterpret_cast<volatile uint64_t*>(p.area() + 64);
  *target = 100;
  ND_MW_DESCRIPTOR d{};
  if (!bind(p, w.mw, p.area(), 4096, ND_OP_FLAG_ALLOW_READ | ND_OP_FLAG_ALLOW_WRITE | NDNIC_OP_FLAG_ALLOW_ATOMIC, &d) ||
      !p.send_ctl(Ctl::kWindow, &d) || !p.recv_ctl(Ctl::kGo))
    return;
  check_u64("target memory after the atomics", *target, 0x1000000CDull);
  p.send_ctl(Ctl::kDone);
}

void atomic_requester(Peer& p) {
  ND_MW_DESCRIPTOR d{};
  if (!p.recv_ctl(Ctl::kWindow, &d)) return;
  struct Step {
    bool cas;
    uint64_t compare_add, swap, expect;
    const char* what;
  };
  static constexpr Step kSteps[] = {
      {true, 100, 200, 100, "CompareAndSwap 100->200 hit returns 100"},
      {true, 100, 300, 200, "CompareAndSwap 100->300 miss returns 200"},
      {false, 5, 0, 200, "FetchAndAdd +5 returns 200"},
      {false, 1ull << 32, 0, 205, "FetchAndAdd +2^32 returns 205"},
  };
  auto* result = reinterpret_cast<volatile uint64_t*>(p.area() + 128);
  ND_SGE sge{p.area() + 128, 8, p.mr()};
  for (const Step& s : kSteps) {
    *result = 0xDEADDEADDEADDEADull;
    if (!run_op(p, s.what, ND_SUCCESS, [&](ND_RESULT* r) {
          return s.cas ? p.ext()->CompareAndSwap(r, &sge, &d, 64, s.compare_add, s.swap, 0)
                       : p.ext()->FetchAndAdd(r, &sge, &d, 64, s.compare_add, 0);
        }))
      return;
    check_u64(s.what, *result, s.expect);
  }
  *result = 0;
  if (run_op(p, "Read after the atomics", ND_SUCCESS,
             [&](ND_RESULT* r) { return p.ep()->Read(r, &sge, 1, &d, 64, 0); }))
    check_u64("Read after the atomics", *result, 0x1000000CDull);
  if (p.send_ctl(Ctl::kGo) && p.recv_ctl(Ctl::kDone)) ok("the target checked its memory");
}

// ---- solicited ---------------------------------------------------------------------------------

void solicited_receiver(Peer& p) {
  OVERLAPPED ov{};
  const HRESULT hr = p.in_cq()->Notify(ND_CQ_NOTIFY_SOLICITED, &ov);
  if (hr != ND_PENDING) return fail("Notify(ND_CQ_NOTIFY_SOLICITED)", status_text(hr), "ND_PENDING");
  if (!p.send_ctl(Ctl::kGo)) return;
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  SIZE_T bytes = 0;
  const HRESULT early = p.in_cq()->GetOverlappedResult(&ov, &bytes, FALSE);
  if (early == ND_PENDING)
    ok("no notification for the unsolicited Send in 500 ms");
  else
    fail("unsolicited Send", "the notify completed with " + status_text(early), "ND_PENDING");
  if (NDNIC_RESULT* r = p.next_recv("the unsolicited Send was received", 10)) {
    check_status("the unsolicited Send was received", r->Status, ND_SUCCESS);
    p.post_slot(p.slot_of(r));
  }
  if (!p.send_ctl(Ctl::kGo)) return;
  const Clock::time_point t0 = Clock::now();
  const HRESULT fired =
      early == ND_PENDING ? nd_app::wait_overlapped(p.in_cq(), &ov, t0 + std::chrono::milliseconds(kWaitMs)) : early;
  if (fired == ND_SUCCESS)
    ok("the solicited Send woke the ND_CQ_NOTIFY_SOLICITED notify (" + std::to_string(ms_since(t0)) + " ms)");
  else
    fail("solicited Send", "the notify gave " + status_text(fired), "ND_SUCCESS");
  if (fired != ND_SUCCESS) p.in_cq()->CancelOverlappedRequests();
  if (NDNIC_RESULT* r = p.next_recv("the solicited Send was received")) {
    check_status("the solicited Send was received", r->Status, ND_SUCCESS);
    if (is_pattern(p.data_of(r), 32, 5))
      ok("solicited Send payload");
    else
      fail("solicited Send payload", "other bytes", "pattern 5");
    p.post_slot(p.slot_of(r));
  }
  p.send_ctl(Ctl::kDone);
}

bool send_bytes(Peer& p, uint32_t len, unsigned seed, DWORD flags, const std::string& what, HRESULT expected) {
  uint8_t* src = p.send_area() + 4096;
  fill_pattern(src, len, seed);
  ND_SGE s{src, len, p.mr()};
  return run_op(p, what, expected, [&](ND_RESULT* r) { return p.ep()->Send(r, &s, 1, flags); });
}

void solicited_sender(Peer& p) {
  if (!p.recv_ctl(Ctl::kGo)) return;
  send_bytes(p, 32, 4, 0, "Send without SE", ND_SUCCESS);
  if (!p.recv_ctl(Ctl::kGo)) return;
  send_bytes(p, 32, 5, ND_OP_FLAG_SEND_AND_SOLICIT_EVENT, "Send with ND_OP_FLAG_SEND_AND_SOLICIT_EVENT", ND_SUCCESS);
  if (p.recv_ctl(Ctl::kDone)) ok("the receiver saw its event");
}

// ---- rnr ---------------------------------------------------------------------------------------

void rnr_receiver(Peer& p) {
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  p.post_slot(0);
  if (NDNIC_RESULT* r = p.next_recv("Send held back by RNR arrives once the receive is posted")) {
    check_status("Send held back by RNR", r->Status, ND_SUCCESS);
    check_u64("Send held back by RNR: bytes", r->BytesTransferred, 64);
    if (is_pattern(p.data_of(r), 64, 6))
      ok("Send held back by RNR: payload");
    else
      fail("Send held back by RNR: payload", "other bytes", "pattern 6");
  }
  for (unsigned i = 1; i < kPoolSlots; i++) p.post_slot(i);
  p.send_ctl(Ctl::kDone);
}

void rnr_sender(Peer& p) {
  const Clock::time_point t0 = Clock::now();
  send_bytes(p, 64, 6, 0, "Send before the peer's receive, RNR retried", ND_SUCCESS);
  const long long ms = ms_since(t0);
  if (ms >= 200)
    ok("the Send completed after the receive was posted (" + std::to_string(ms) + " ms)");
  else
    fail("Send timing", "completion after " + std::to_string(ms) + " ms", ">= 200 ms (receive posted at 400 ms)");
  if (p.recv_ctl(Ctl::kDone)) ok("the receiver got the Send");
}

void rnrx_receiver(Peer& p) {
  std::this_thread::sleep_for(std::chrono::seconds(2));
  if (!p.post_slot(0)) return;
  const NDNIC_RESULT* r = p.slot_result(0);
  if (p.wait(r, 1000))
    fail("after the sender's RNR retries ran out", "a receive result (" + status_text(r->Status) + ")", "none");
  else
    ok("nothing arrives after the sender's RNR retries ran out");
}

void rnrx_sender(Peer& p) {
  send_bytes(p, 64, 6, 0, "Send with rnr_retry 0 and no receive", ND_TIMEOUT);
  p.expect_flushed("sender after RNR retry exceeded");
  // Stay connected while the receiver watches for a late delivery: a disconnect now would
  // flush its receive instead.
  std::this_thread::sleep_for(kRnrxLinger);
}

// ---- access ------------------------------------------------------------------------------------

void access_target(Peer& p) {
  Window w(p);
  if (!w.mw) return fail("CreateMemoryWindow", "an error", "a window");
  ND_MW_DESCRIPTOR d{};
  if (!bind(p, w.mw, p.area(), 4096, ND_OP_FLAG_ALLOW_WRITE, &d) || !p.send_ctl(Ctl::kWindow, &d)) return;
  p.expect_flushed("target after the peer's bad-token Write");
}

void access_requester(Peer& p) {
  ND_MW_DESCRIPTOR d{};
  if (!p.recv_ctl(Ctl::kWindow, &d)) return;
  d.Token ^= htobe32(0x80);
  ND_SGE w{p.area(), 64, p.mr()};
  run_op(p, "Write with a bad token", ND_REMOTE_ERROR, [&](ND_RESULT* r) { return p.ep()->Write(r, &w, 1, &d, 0, 0); });
  p.expect_flushed("requester after its remote access error");
}

constexpr Scenario kScenarios[] = {
    {"mw", mw_accessor, mw_owner, false, 7},
    {"imm", imm_sender, imm_receiver, false, 7},
    {"atomic", atomic_requester, atomic_target, false, 7},
    {"solicited", solicited_sender, solicited_receiver, false, 7},
    {"rnr", rnr_sender, rnr_receiver, true, 7},
    {"rnrx", rnrx_sender, rnrx_receiver, true, 0},
    {"access", access_requester, access_target, false, 7},
};

}  // namespace

const Scenario* find_scenario(const std::string& name) {
  for (const Scenario& s : kScenarios)
    if (name == s.name) return &s;
  return nullptr;
}

std::string scenario_names() {
  std::string s;
  for (const Scenario& sc : kScenarios) s.append(s.empty() ? "" : " ").append(sc.name);
  return s;
}

}  // namespace ndnic::nd_peer
