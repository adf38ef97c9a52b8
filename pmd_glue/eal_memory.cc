#include "pmd_glue/eal_memory.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <fstream>

namespace ndnic::glue {
namespace {

constexpr const char* kFreeHugepages = "/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages";
constexpr unsigned kHugepageMb = 2;

long free_hugepages() {
  std::ifstream f(kFreeHugepages);
  long n = -1;
  if (!(f >> n)) return -1;
  return n;
}

// EAL's hugepage allocator sets the NUMA memory policy around each allocation and gives up when
// it may not (rte_eal_init: "Cannot init memory"). Docker's default seccomp profile refuses the
// mempolicy calls to a container without CAP_SYS_NICE while /sys still shows the host's free
// hugepages, so ask the kernel first; reading the policy changes nothing.
bool numa_policy_allowed() {
  int mode = 0;
  return syscall(SYS_get_mempolicy, &mode, nullptr, 0UL, nullptr, 0UL) == 0 || errno != EPERM;
}

}  // namespace

MemoryChoice choose_memory(unsigned memory_mb) {
  MemoryChoice c;
  const std::string mb = std::to_string(memory_mb);
  const long free = free_hugepages();
  const long needed = long((memory_mb + kHugepageMb - 1) / kHugepageMb);
  const bool policy_allowed = numa_policy_allowed();
  if (free >= needed && free > 0 && policy_allowed) {
    // --in-memory needs no hugetlbfs mount and leaves no files, so processes never collide.
    // --single-file-segments keeps the memory in a few fds: vhost-user shares at most 8
    // regions, and virtio_user fails with one fd per 2 MiB page.
    c.hugepages = true;
    c.args = {"--in-memory", "--single-file-segments", "-m", mb};
    c.reason = "hugepages (" + std::to_string(free) + " x 2 MiB free, --in-memory -m " + mb + ")";
    return c;
  }
  // EAL rejects --in-memory with --no-huge, so a per-process prefix keeps runtime files apart.
  static std::atomic<unsigned> serial{0};
  c.file_prefix = "ndnic-" + std::to_string(getpid()) + "-" + std::to_string(serial++);
  c.args = {"--no-huge", "-m", mb, "--file-prefix", c.file_prefix};
  if (!policy_allowed)
    c.reason = "--no-huge (" + std::to_string(free) + " x 2 MiB free, but EAL may not set the NUMA " +
               "memory policy hugepages need: get_mempolicy refused, a container's seccomp profile?)";
  else if (free < 0)
    c.reason = "--no-huge (no 2 MiB hugepage support)";
  else if (free == 0)
    c.reason = "--no-huge (no free hugepages)";
  else
    c.reason = "--no-huge (" + std::to_string(free) + " x 2 MiB free, " + std::to_string(needed) +
               " needed for -m " + mb + ")";
  return c;
}

}  // namespace ndnic::glue
