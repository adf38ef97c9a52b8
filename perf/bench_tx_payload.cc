// What a transmitted payload costs the sender per packet, three ways, to find where zero-copy
// transmit would start to pay (issue: "copying below a measured size threshold"):
//
// - copy: one mbuf from the pool, the payload CRC'd while it is copied in (crc32_copy, what
//   nic/tx.cc does), then freed with its burst; memcpy_crc: the same with the copy and the
//   CRC apart;
// - extbuf: the headers' mbuf, an mbuf attached to the payload where it lies
//   (rte_pktmbuf_attach_extbuf, with a shared-info block from a pool of its own whose free
//   callback releases a pin on the region, as a registered region would need), and the
//   trailer's mbuf (pad and ICRC); the payload is CRC'd where it lies; the chain is freed with
//   its burst, which runs the callback.
//
// Both do the ICRC, which reads the payload either way; the difference is the copy's writes
// against the extra mbufs, the attach and the callback. Bursts of 32, as the TX batch sends
// them; the payload moves through a 4 MiB region, so it is not always in L1.
#include <atomic>
#include <cstring>
#include <vector>

#include <benchmark/benchmark.h>
#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "wire/icrc.h"

namespace {

constexpr unsigned kBurst = 32;
constexpr size_t kRegion = 4 << 20;
constexpr uint16_t kDataRoom = RTE_PKTMBUF_HEADROOM + 4096 + 128;

/// A shared-info block of an attached payload, and the pin it holds on its region.
struct Pin {
  rte_mbuf_ext_shared_info shinfo;
  std::atomic<uint32_t>* pins;
  rte_mempool* home;
};

void unpin(void* /*addr*/, void* opaque) {
  auto* p = static_cast<Pin*>(opaque);
  p->pins->fetch_sub(1, std::memory_order_release);
  rte_mempool_put(p->home, p);
}

struct Pools {
  rte_mempool* mbufs = nullptr;
  rte_mempool* pins = nullptr;
  std::vector<uint8_t> region = std::vector<uint8_t>(kRegion);
  std::atomic<uint32_t> pinned{0};
  Pools() {
    mbufs = rte_pktmbuf_pool_create("bench_txp", 8191, 256, 0, kDataRoom, int(rte_socket_id()));
    pins = rte_mempool_create("bench_txp_pins", 4095, sizeof(Pin), 128, 0, nullptr, nullptr, nullptr, nullptr,
                              int(rte_socket_id()), 0);
    for (size_t i = 0; i < kRegion; i++) region[i] = uint8_t(i * 13);
  }
};

/// The payload's IOVA without a per-packet lookup (rte_mem_virt2iova reads /proc/self/pagemap
/// for memory EAL does not manage: ~3.7 us a packet here). A region would be given its IOVA
/// when registered (rte_extmem_register and a DMA map for a device that DMAs); the software
/// ports never read it.
rte_iova_t iova_of(const uint8_t* va) {
  return rte_eal_iova_mode() == RTE_IOVA_VA ? rte_iova_t(reinterpret_cast<uintptr_t>(va)) : RTE_BAD_IOVA;
}

Pools* pools(benchmark::State& state) {
  static Pools p;  // after EAL (bench_main.cc)
  if (!p.mbufs || !p.pins) {
    state.SkipWithError("mempool creation failed");
    return nullptr;
  }
  return &p;
}

/// The payload copied into one mbuf per packet, with its CRC: fused (crc32_copy, what
/// nic/tx.cc does) or apart (glibc's memcpy, which for large copies stores without reading the
/// destination first, then crc32 over the bytes copied).
template <bool kFused>
void BM_tx_copied(benchmark::State& state) {
  Pools* p = pools(state);
  if (!p) return;
  const uint32_t len = uint32_t(state.range(0));
  size_t off = 0;
  uint32_t crc = 0;
  rte_mbuf* m[kBurst];
  for (auto _ : state) {
    if (rte_pktmbuf_alloc_bulk(p->mbufs, m, kBurst) != 0) return state.SkipWithError("no mbufs");
    for (unsigned i = 0; i < kBurst; i++) {
      if (off + len > kRegion) off = 0;
      uint8_t* d = rte_pktmbuf_mtod(m[i], uint8_t*) + 64;  // behind the headers
      const uint8_t* src = p->region.data() + off;
      if (kFused) {
        crc ^= ndnic::wire::crc32_copy(0, d, src, len);
      } else {
        std::memcpy(d, src, len);
        crc ^= ndnic::wire::crc32(0, src, len);
      }
      m[i]->data_len = uint16_t(64 + len + 4);
      m[i]->pkt_len = m[i]->data_len;
      off += len;
    }
    rte_pktmbuf_free_bulk(m, kBurst);
  }
  benchmark::DoNotOptimize(crc);
  state.SetItemsProcessed(int64_t(state.iterations()) * kBurst);
  state.SetBytesProcessed(int64_t(state.iterations()) * kBurst * len);
}

void BM_tx_extbuf(benchmark::State& state) {
  Pools* p = pools(state);
  if (!p) return;
  const uint32_t len = uint32_t(state.range(0));
  size_t off = 0;
  uint32_t crc = 0;
  rte_mbuf* m[3 * kBurst];
  rte_mbuf* chains[kBurst];
  void* pin[kBurst];
  for (auto _ : state) {
    if (rte_pktmbuf_alloc_bulk(p->mbufs, m, 3 * kBurst) != 0) return state.SkipWithError("no mbufs");
    if (rte_mempool_get_bulk(p->pins, pin, kBurst) != 0) return state.SkipWithError("no pins");
    for (unsigned i = 0; i < kBurst; i++) {
      if (off + len > kRegion) off = 0;
      rte_mbuf* hdr = m[3 * i];
      rte_mbuf* pay = m[3 * i + 1];
      rte_mbuf* trl = m[3 * i + 2];
      hdr->data_len = hdr->pkt_len = 64;
      uint8_t* src = p->region.data() + off;
      auto* pn = static_cast<Pin*>(pin[i]);
      pn->shinfo.free_cb = unpin;
      pn->shinfo.fcb_opaque = pn;
      rte_mbuf_ext_refcnt_set(&pn->shinfo, 1);
      pn->pins = &p->pinned;
      pn->home = p->pins;
      p->pinned.fetch_add(1, std::memory_order_relaxed);
      rte_pktmbuf_attach_extbuf(pay, src, iova_of(src), uint16_t(len), &pn->shinfo);
      pay->data_len = uint16_t(len);
      pay->pkt_len = len;
      crc ^= ndnic::wire::crc32(0, src, len);
      trl->data_len = trl->pkt_len = 4;
      rte_pktmbuf_chain(hdr, pay);
      rte_pktmbuf_chain(hdr, trl);
      chains[i] = hdr;
      off += len;
    }
    rte_pktmbuf_free_bulk(chains, kBurst);  // each chain whole: the attached mbuf runs unpin()
  }
  benchmark::DoNotOptimize(crc);
  if (p->pinned.load() != 0) state.SkipWithError("a pin was not released");
  state.SetItemsProcessed(int64_t(state.iterations()) * kBurst);
  state.SetBytesProcessed(int64_t(state.iterations()) * kBurst * len);
}

BENCHMARK(BM_tx_copied<true>)->Name("BM_tx_copy")->Arg(64)->Arg(256)->Arg(512)->Arg(1024)->Arg(2048)->Arg(4096)->MinTime(0.1);
BENCHMARK(BM_tx_copied<false>)->Name("BM_tx_memcpy_crc")->Arg(64)->Arg(256)->Arg(512)->Arg(1024)->Arg(2048)->Arg(4096)->MinTime(0.1);
BENCHMARK(BM_tx_extbuf)->Arg(64)->Arg(256)->Arg(1024)->Arg(2048)->Arg(4096)->MinTime(0.1);

}  // namespace
