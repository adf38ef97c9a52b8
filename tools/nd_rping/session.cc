#include "tools/nd_rping/session.h"

#include <endian.h>

#include <cstdio>
#include <cstring>
#include <thread>

#include "tools/nd_app/node.h"
#include "tools/nd_app/status.h"
#include "tools/nd_app/waits.h"

namespace ndnic::nd_rping {
namespace {

using nd_app::status_text;

constexpr auto kIdleSleep = std::chrono::microseconds(20);
constexpr auto kDisconnectNotice = std::chrono::seconds(2);

}  // namespace

Session::Session(INDAdapter* adapter, const Options& o)
    : adapter_(adapter), opts_(o), actor_("nd_rping", "", o.timeout_s, halt_, false), conn_(actor_) {}

Session::~Session() {
  drop_endpoint();
  if (mr_) {
    OVERLAPPED ov{};
    if (adapter_->DeregisterMemory(mr_, &ov) == ND_PENDING) nd_app::wait_overlapped(adapter_, &ov, deadline());
  }
  if (cq_) cq_->Release();
}

bool Session::open(uint32_t rdma_size, uint32_t start_size) {
  HRESULT hr = adapter_->CreateCompletionQueue(kSendDepth + kRecvDepth + 4, &cq_);
  if (FAILED(hr)) {
    std::fprintf(stderr, "nd_rping: CreateCompletionQueue: %s\n", status_text(hr).c_str());
    return false;
  }
  constexpr size_t kSlots = sizeof(RpingInfo) * (kRecvDepth + 1);
  block_.assign(kSlots + rdma_size + start_size, 0);
  recv_ = reinterpret_cast<RpingInfo*>(block_.data());
  send_ = recv_ + kRecvDepth;
  sink_ = reinterpret_cast<char*>(block_.data() + kSlots);
  source_ = start_size ? sink_ + rdma_size : nullptr;
  OVERLAPPED ov{};
  hr = adapter_->RegisterMemory(block_.data(), block_.size(), &ov, &mr_);
  if (hr == ND_PENDING) hr = nd_app::wait_overlapped(adapter_, &ov, deadline());
  if (FAILED(hr)) {
    std::fprintf(stderr, "nd_rping: RegisterMemory: %s\n", status_text(hr).c_str());
    mr_ = nullptr;
    return false;
  }
  return true;
}

bool Session::new_endpoint() {
  drop_endpoint();
  if (!conn_.create_endpoint(adapter_, cq_, nd_app::EndpointShape{kRecvDepth, kSendDepth, 1, kReadDepth})) return false;
  next_recv_ = 0;
  for (unsigned i = 0; i < kRecvDepth; i++)
    if (!post_receive(i)) return false;
  return true;
}

void Session::drop_endpoint() {
  if (watching_) connector()->CancelOverlappedRequests();
  watching_ = false;
  conn_.release();
  // Reap what the endpoint's end flushed, so the CQ starts the next connection empty.
  ND_RESULT* r[16];
  while (cq_ && cq_->GetResults(r, 16)) {
  }
}

bool Session::post_receive(unsigned slot) {
  ND_SGE sge{&recv_[slot], sizeof(RpingInfo), mr_};
  const HRESULT hr = endpoint()->Receive(&recv_r_[slot], &sge, 1);
  if (FAILED(hr)) {
    std::fprintf(stderr, "nd_rping: Receive: %s\n", status_text(hr).c_str());
    return false;
  }
  return true;
}

bool Session::wait(ND_RESULT* r, const char* what) {
  const Clock::time_point end = deadline();
  ND_RESULT* got[16];
  while (r->Status == ND_PENDING) {
    if (cq_->GetResults(got, 16)) continue;
    if (disconnected() && r->Status == ND_PENDING) return false;
    if (Clock::now() > end) {
      std::fprintf(stderr, "nd_rping: no completion for the %s in %u s\n", what, opts_.timeout_s);
      return false;
    }
    std::this_thread::sleep_for(kIdleSleep);
  }
  if (r->Status != ND_SUCCESS) {
    // A receive flushed by the peer's disconnect is how rping's loop ends, not an error. The
    // flush can overtake the disconnect notice by a moment.
    if (r->Status == ND_CANCELED && watching_) {
      const Clock::time_point notice = Clock::now() + kDisconnectNotice;
      while (!disconnected() && Clock::now() < notice) std::this_thread::sleep_for(kIdleSleep);
    }
    if (!(r->Status == ND_CANCELED && disconnected()))
      std::fprintf(stderr, "nd_rping: %s completed with %s\n", what, status_text(r->Status).c_str());
    return false;
  }
  return true;
}

bool Session::next_receive(RpingInfo* info) {
  const unsigned slot = next_recv_;
  ND_RESULT* r = &recv_r_[slot];
  if (!wait(r, "receive")) return false;
  if (r->BytesTransferred != sizeof(RpingInfo)) {
    std::fprintf(stderr, "Received bogus data, size %zu\n", size_t(r->BytesTransferred));
    return false;
  }
  *info = recv_[slot];
  next_recv_ = (slot + 1) % kRecvDepth;
  return post_receive(slot);
}

bool Session::send_info(const RpingInfo& info) {
  *send_ = info;
  ND_SGE sge{send_, sizeof(RpingInfo), mr_};
  ND_RESULT r{};
  const HRESULT hr = endpoint()->Send(&r, &sge, 1, 0);
  if (FAILED(hr)) {
    std::fprintf(stderr, "post send error: %s\n", status_text(hr).c_str());
    return false;
  }
  return wait(&r, "send");
}

bool Session::rdma(bool read, const RpingInfo& peer, uint32_t len) {
  ND_MW_DESCRIPTOR d{peer.buf, htobe64(be32toh(peer.size)), peer.rkey};
  ND_SGE sge{sink_, len, mr_};
  ND_RESULT r{};
  const HRESULT hr = read ? endpoint()->Read(&r, &sge, 1, &d, 0, 0) : endpoint()->Write(&r, &sge, 1, &d, 0, 0);
  if (FAILED(hr)) {
    std::fprintf(stderr, "post send error: %s\n", status_text(hr).c_str());
    return false;
  }
  return wait(&r, read ? "RDMA READ" : "RDMA WRITE");
}

bool Session::bind(INDMemoryWindow* w, char* p, uint32_t len, DWORD flags, RpingInfo* info) {
  ND_MW_DESCRIPTOR d{};
  ND_RESULT r{};
  const HRESULT hr = endpoint()->Bind(&r, mr_, w, p, len, flags, &d);
  if (FAILED(hr)) {
    std::fprintf(stderr, "nd_rping: Bind: %s\n", status_text(hr).c_str());
    return false;
  }
  if (!wait(&r, "bind")) return false;
  info->buf = d.Base;
  info->rkey = d.Token;
  info->size = htobe32(len);
  return true;
}

bool Session::watch_disconnect() {
  const HRESULT hr = connector()->NotifyDisconnect(&disc_ov_);
  if (FAILED(hr)) {
    std::fprintf(stderr, "nd_rping: NotifyDisconnect: %s\n", status_text(hr).c_str());
    return false;
  }
  watching_ = true;
  return true;
}

bool Session::disconnected() {
  if (!peer_gone_ && watching_) {
    SIZE_T bytes;
    peer_gone_ = connector()->GetOverlappedResult(&disc_ov_, &bytes, FALSE) != ND_PENDING;
    if (peer_gone_) watching_ = false;
  }
  return peer_gone_;
}

void Session::disconnect() {
  if (!connector()) return;
  OVERLAPPED ov{};
  const HRESULT hr = connector()->Disconnect(&ov);
  if (hr == ND_PENDING) nd_app::wait_overlapped(connector(), &ov, deadline());
}

}  // namespace ndnic::nd_rping
