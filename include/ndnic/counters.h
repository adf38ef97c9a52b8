// Counters kept as structs of uint64_t and nothing else, each with one table of the names it
// is reported under: the struct's owner sums them with add_counters, and telemetry and
// ndperf --stats read them through the table. A new counter is a field and a table row.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace ndnic::glue {

/// One counter of a counters struct: the name it is reported under, and where it is.
struct CounterField {
  const char* name;
  size_t offset;
};

/// The counter `f` names in `c`.
template <class C>
uint64_t counter_value(const C& c, const CounterField& f) {
  uint64_t v;
  std::memcpy(&v, reinterpret_cast<const char*>(&c) + f.offset, sizeof v);
  return v;
}

/// Adds every counter of `from` to `to`, arrays included.
template <class C>
void add_counters(C& to, const C& from) {
  static_assert(std::is_standard_layout_v<C> && std::is_trivially_copyable_v<C> && sizeof(C) % sizeof(uint64_t) == 0,
                "a counters struct holds uint64_t and nothing else");
  constexpr size_t n = sizeof(C) / sizeof(uint64_t);
  uint64_t a[n], b[n];
  std::memcpy(a, &to, sizeof a);
  std::memcpy(b, &from, sizeof b);
  for (size_t i = 0; i < n; i++) a[i] += b[i];
  std::memcpy(static_cast<void*>(&to), a, sizeof a);
}

}  // namespace ndnic::glue
