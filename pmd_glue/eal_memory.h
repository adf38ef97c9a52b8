// How EAL gets its memory when the user did not say: hugepages when enough are free, since they
// are several times faster here, otherwise --no-huge, which works on any machine.
#pragma once

#include <string>
#include <vector>

namespace ndnic::glue {

struct MemoryChoice {
  std::vector<std::string> args;   ///< EAL options to add
  bool hugepages = false;
  std::string reason;              ///< for the one "ndnic: memory:" line
  std::string file_prefix;         ///< generated prefix, empty with --in-memory
};

MemoryChoice choose_memory(unsigned memory_mb);

}  // namespace ndnic::glue
