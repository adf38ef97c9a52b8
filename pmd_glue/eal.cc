#include <cstdio>
#include <filesystem>
#include <set>
#include <string_view>

#include <rte_eal.h>
#include <rte_errno.h>

#include "pmd_glue/eal_memory.h"
#include "ndnic/port.h"

namespace ndnic::glue {
namespace {

constexpr std::string_view kSeparator = "--";

// Options that decide where EAL memory comes from: any of them means the user chose.
const std::set<std::string_view> kMemoryOptions = {
    "--no-huge", "--in-memory", "-m", "--socket-mem", "--socket-limit", "--file-prefix",
    "--huge-dir", "--legacy-mem", "--huge-unlink", "--single-file-segments",
};

// Options that say the same thing in different words; a program default is dropped when the
// user gave any member of its group (a "-l" default must not fight the user's "-c").
const std::vector<std::set<std::string_view>> kSynonyms = {
    {"-l", "--lcores", "-c"},
    {"--no-pci", "-a", "--allow", "-b", "--block", "-w"},
    {"--main-lcore", "--master-lcore"},
    {"--telemetry", "--no-telemetry"},  // EAL lets --no-telemetry win whatever the order
};

std::string option_name(std::string_view arg) {
  if (arg.starts_with("--")) return std::string(arg.substr(0, arg.find('=')));
  if (arg.size() >= 2 && arg[0] == '-') return std::string(arg.substr(0, 2));
  return {};
}

bool user_gave(const std::set<std::string>& given, const std::string& name) {
  if (given.count(name)) return true;
  for (const auto& group : kSynonyms)
    if (group.count(name))
      for (auto alias : group)
        if (given.count(std::string(alias))) return true;
  return false;
}

std::string generated_prefix;
bool chose_memory = false;

}  // namespace

EalResult eal_init(int argc, char** argv, const EalDefaults& defaults) {
  EalResult r;
  std::vector<std::string> eal{argc > 0 ? argv[0] : "ndnic"};
  int first_ours = 1;
  for (int i = 1; i < argc; i++) {
    if (argv[i] == kSeparator) {
      for (int j = 1; j < i; j++) eal.emplace_back(argv[j]);
      first_ours = i + 1;
      break;
    }
  }
  for (int i = first_ours; i < argc; i++) r.args.emplace_back(argv[i]);

  std::set<std::string> given;
  for (size_t i = 1; i < eal.size(); i++) given.insert(option_name(eal[i]));

  for (const auto& [name, value] : defaults.options) {
    if (user_gave(given, name)) continue;
    eal.push_back(name);
    if (!value.empty()) eal.push_back(value);
  }

  bool user_memory = false;
  for (const auto& name : given) user_memory |= kMemoryOptions.count(name) > 0;
  if (user_memory) {
    r.hugepages = !given.count("--no-huge");
    r.memory_line = "ndnic: memory: as given on the command line";
  } else {
    MemoryChoice m = choose_memory(defaults.memory_mb);
    eal.insert(eal.end(), m.args.begin(), m.args.end());
    r.hugepages = m.hugepages;
    r.memory_line = "ndnic: memory: " + m.reason;
    generated_prefix = m.file_prefix;
    chose_memory = true;
  }
  if (defaults.announce) {
    std::printf("%s\n", r.memory_line.c_str());
    std::fflush(stdout);
  }

  std::vector<char*> cargv;
  for (auto& s : eal) cargv.push_back(s.data());
  cargv.push_back(nullptr);
  if (rte_eal_init(int(eal.size()), cargv.data()) < 0) {
    r.error = std::string("rte_eal_init: ") + rte_strerror(rte_errno);
    return r;
  }
  r.ok = true;
  return r;
}

void eal_cleanup() {
  // Read before rte_eal_cleanup, which forgets it.
  const std::string runtime_dir = rte_eal_get_runtime_dir();
  rte_eal_cleanup();
  std::error_code ec;
  if (!generated_prefix.empty())
    std::filesystem::remove_all(runtime_dir, ec);
  else if (chose_memory)  // --in-memory still makes an empty directory; another process may share it
    std::filesystem::remove(runtime_dir, ec);
}

}  // namespace ndnic::glue
