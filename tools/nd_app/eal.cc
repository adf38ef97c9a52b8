#include "tools/nd_app/eal.h"

#include <cstdio>

#include "ndnic/port.h"

namespace ndnic::nd_app {

bool start_eal(const char* tool, int argc, char** argv, const EalOption& lcores, std::vector<std::string>* args,
               const std::vector<EalOption>& more) {
  glue::EalDefaults defaults;
  defaults.options = {lcores, {"--no-pci", ""}, {"--log-level", "lib.eal:warning"}};
  defaults.options.insert(defaults.options.end(), more.begin(), more.end());
  defaults.options.push_back({"--no-telemetry", ""});
  const glue::EalResult eal = glue::eal_init(argc, argv, defaults);
  if (!eal.ok) {
    std::fprintf(stderr, "%s: %s\n", tool, eal.error.c_str());
    return false;
  }
  if (args) *args = eal.args;
  return true;
}

}  // namespace ndnic::nd_app
