#include "tests/tshark/tshark_runner.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

extern char** environ;

namespace ndnic::test {
namespace {

bool is_executable(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t end = s.find(sep, start);
    out.push_back(s.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

namespace {

// Wireshark 4.0's heuristic dissectors for InfiniBand payloads other than RPC-over-RDMA
// (names as `--disable-heuristic` takes them; see heur_dissector_add in its dissectors).
constexpr const char* kPayloadHeuristics[] = {
    "mellanox_eoib", "eth_over_ib", "sdp_infiniband", "fc_infiniband", "smcr_infiniband",
    "nvme_rdma", "lnet_ib", "iser_infiniband", "smb_direct_infiniband",
};

int run_quietly(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  int rc = posix_spawn(&pid, args[0].c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// The payload heuristics this tshark knows (it refuses to start when asked to disable an
/// unknown one, and other versions name them differently). Probed once per process.
const std::vector<std::string>& payload_heuristics(const std::string& tshark, const std::string& pcap) {
  static std::map<std::string, std::vector<std::string>> known;
  auto [it, inserted] = known.try_emplace(tshark);
  if (inserted)
    for (const char* h : kPayloadHeuristics)
      if (run_quietly({tshark, "-r", pcap, "-c", "1", "--disable-heuristic", h}) == 0) it->second.push_back(h);
  return it->second;
}

}  // namespace

std::string find_tshark() {
  if (const char* env = std::getenv("NDNIC_TSHARK"); env && *env && is_executable(env)) return env;
  const char* path = std::getenv("PATH");
  for (const std::string& dir : split(path ? path : "/usr/bin:/bin", ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/tshark";
    if (is_executable(candidate)) return candidate;
  }
  return "";
}

bool run_tshark_fields(const std::string& tshark, const std::string& pcap,
                       const std::vector<std::string>& fields, std::vector<TsharkRow>* rows,
                       std::string* error) {
  // Tab-separated, first occurrence only: IETH and ImmDt are shown twice by Wireshark 4.0,
  // and IPv6 addresses contain ':' so no other separator is safe. Wireshark verifies IPv4
  // header checksums only when asked to.
  std::vector<std::string> args = {tshark, "-n", "-r", pcap, "--disable-heuristic", "rpcrdma_infiniband",
                                   "-o", "ip.check_checksum:TRUE"};
  // Beyond RPC-over-RDMA, Wireshark guesses other protocols in InfiniBand payloads (Ethernet,
  // EoIB, SDP, ...); random test payloads sometimes look like one and are then shown as that
  // protocol, malformed. The payload is opaque to RoCE, so turn every such guess off and
  // compare it as plain data.
  for (const std::string& h : payload_heuristics(tshark, pcap)) {
    args.push_back("--disable-heuristic");
    args.push_back(h);
  }
  args.insert(args.end(), {
                                   "-T", "fields", "-E", "separator=/t", "-E", "occurrence=f",
                                   "-E", "header=n", "-E", "quote=n"});
  for (const auto& f : fields) {
    args.push_back("-e");
    args.push_back(f);
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  int out_pipe[2];
  if (pipe(out_pipe) != 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  // stderr goes to a file: reading two pipes from one thread could deadlock.
  const std::string err_path = pcap + ".tshark-stderr";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&fa, out_pipe[0]);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid;
  int rc = posix_spawn(&pid, tshark.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(out_pipe[1]);
  if (rc != 0) {
    close(out_pipe[0]);
    *error = "cannot start " + tshark + ": " + std::strerror(rc);
    return false;
  }
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = read(out_pipe[0], buf, sizeof(buf));
    if (n > 0) {
      out.append(buf, size_t(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  close(out_pipe[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const std::string err_text = read_file(err_path);
  std::remove(err_path.c_str());
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    *error = tshark + " failed on " + pcap + " (status " + std::to_string(status) + "): " + err_text;
    return false;
  }

  rows->clear();
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    std::vector<std::string> values = split(line, '\t');
    if (values.size() != fields.size()) {
      *error = "tshark printed " + std::to_string(values.size()) + " columns, expected " +
               std::to_string(fields.size()) + ": " + line;
      return false;
    }
    TsharkRow row;
    for (size_t i = 0; i < fields.size(); i++)
      if (!values[i].empty()) row[fields[i]] = values[i];
    rows->push_back(std::move(row));
  }
  return true;
}

}  // namespace ndnic::test
