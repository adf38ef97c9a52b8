// EAL as every ND tool starts it: its lcores (the tool's choice unless the user gave theirs),
// no PCI scan, EAL's warnings only, no telemetry socket, unless the user says otherwise.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ndnic::nd_app {

using EalOption = std::pair<std::string, std::string>;  ///< {"--lcores", "0@0,1@1"}; "" for no value

/// Starts EAL with `lcores` ({"--lcores", map} or {"-l", list}), the defaults above and
/// `more`. False after "TOOL: why" on stderr. `args`, when given, gets the program's own
/// arguments (after "--").
bool start_eal(const char* tool, int argc, char** argv, const EalOption& lcores,
               std::vector<std::string>* args = nullptr, const std::vector<EalOption>& more = {});

}  // namespace ndnic::nd_app
