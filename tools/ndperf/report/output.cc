#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tools/ndperf/report/output.h"

namespace ndnic::ndperf {
namespace {

/// Where results asked for on stdout go: the real stdout, saved before the tables were
/// moved to stderr (see OutputFiles::open).
int g_stdout_fd = -1;

FILE* open_result_file(const std::string& path, const char* what) {
  if (path == "-") {
    if (g_stdout_fd < 0) {
      // The tables and every other line go to stderr from here on; stdout keeps the results.
      std::fflush(stdout);
      g_stdout_fd = dup(STDOUT_FILENO);
      dup2(STDERR_FILENO, STDOUT_FILENO);
    }
    return fdopen(dup(g_stdout_fd), "w");
  }
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) std::fprintf(stderr, "ndperf: cannot write the %s file %s: %s\n", what, path.c_str(), std::strerror(errno));
  return f;
}

bool finish(FILE* f, const char* what) {
  const bool ok = std::fflush(f) == 0 && !std::ferror(f);
  if (std::fclose(f) != 0 || !ok) {
    std::fprintf(stderr, "ndperf: writing the %s output failed\n", what);
    return false;
  }
  return true;
}

}  // namespace

OutputFiles::~OutputFiles() {
  if (json_) std::fclose(json_);
  if (csv_) std::fclose(csv_);
}

bool OutputFiles::open(const Options& o) {
  if (!o.plot_path.empty()) {
    if (find_gnuplot().empty()) {
      std::fprintf(stderr,
                   "ndperf: --plot needs gnuplot, which is not installed (Debian: apt-get install gnuplot-nox, "
                   "or scripts/install-deps.sh)\n");
      return false;
    }
    plot_path_ = o.plot_path;
  }
  if (!o.json_path.empty() && !(json_ = open_result_file(o.json_path, "JSON"))) return false;
  if (!o.csv_path.empty() && !(csv_ = open_result_file(o.csv_path, "CSV"))) return false;
  return true;
}

bool OutputFiles::write(const RunReport& r) {
  bool ok = true;
  if (json_) {
    write_json(json_, r);
    ok = finish(json_, "JSON") && ok;
    json_ = nullptr;
  }
  if (csv_) {
    write_csv(csv_, r);
    ok = finish(csv_, "CSV") && ok;
    csv_ = nullptr;
  }
  if (!plot_path_.empty()) {
    std::string error;
    if (!write_plot(plot_path_, r, find_gnuplot(), &error)) {
      std::fprintf(stderr, "ndperf: --plot: %s\n", error.c_str());
      ok = false;
    }
  }
  return ok;
}

}  // namespace ndnic::ndperf
