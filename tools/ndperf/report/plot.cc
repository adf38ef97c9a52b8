// --plot: bandwidth and latency against message size, drawn by gnuplot (Debian gnuplot-nox)
// from a script with the figures inline. Bandwidth panel: every bandwidth test and memcpy
// (BW average); latency panel: every latency test (t_typical); sendinv, when it ran, gets a
// third panel of its own (cycles per second). Both axes are logarithmic: a sweep spans seven
// decades of bandwidth.
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "tools/ndperf/report/output.h"

extern char** environ;

namespace ndnic::ndperf {
namespace {

constexpr int kPanelWidth = 640;
constexpr int kHeight = 480;
constexpr unsigned char kPngMagic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

struct Panel {
  const char* ylabel;
  std::vector<const TestResult*> tests;
  double (*value)(const Row&);
};

double bw(const Row& r) { return r.bw_avg_gbps; }
double lat(const Row& r) { return r.t_typical_us; }
double cycles(const Row& r) { return r.cycles_per_sec; }

/// Every fourth power of two in [lo, hi], labelled 2, 32, 512, 8K, 128K, 2M, ...
std::string size_tics(double lo, double hi) {
  std::string out;
  for (uint64_t v = 1; double(v) <= hi; v <<= 2) {
    if (double(v) < lo) continue;
    const char* unit = v >= (1u << 20) ? "M" : v >= (1u << 10) ? "K" : "";
    const uint64_t shown = v >= (1u << 20) ? v >> 20 : v >= (1u << 10) ? v >> 10 : v;
    out.append(out.empty() ? "" : ", ").append("'").append(std::to_string(shown)).append(unit).append("' ");
    out.append(std::to_string(v));
  }
  return out;
}

bool has_points(const Panel& p) {
  for (const TestResult* t : p.tests)
    for (const Row& r : t->rows)
      if (p.value(r) > 0) return true;
  return false;
}

std::string script(const std::string& png, const RunReport& r) {
  Panel panels[] = {{"bandwidth [Gb/s] (BW average)", {}, bw},
                    {"latency [usec] (t_typical)", {}, lat},
                    {"SendAndInvalidate cycles per second", {}, cycles}};
  double xmin = 0, xmax = 0;
  for (const TestResult& t : r.tests) {
    const Kind k = info(t.test).kind;
    panels[k == Kind::kLatency ? 1 : k == Kind::kCycles ? 2 : 0].tests.push_back(&t);
    for (const Row& row : t.rows) {
      xmin = xmin == 0 ? row.bytes : std::min<double>(xmin, row.bytes);
      xmax = std::max<double>(xmax, row.bytes);
    }
  }
  std::vector<const Panel*> used;
  for (const Panel& p : panels)
    if (has_points(p)) used.push_back(&p);
  std::ostringstream s;
  s << "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) { set terminal pngcairo noenhanced size "
    << kPanelWidth * std::max<size_t>(1, used.size()) << "," << kHeight << " }"
    << " else { set terminal png noenhanced size " << kPanelWidth * std::max<size_t>(1, used.size()) << ","
    << kHeight << " }\n";
  s << "set output '" << png << "'\n";
  s << "set multiplot layout 1," << std::max<size_t>(1, used.size()) << " title 'ndperf (" << role_name(r.mode)
    << ")'\n";
  s << "set logscale x 2\nset logscale y\nset grid\nset key top left\nset format y '%g'\n";
  s << "set xrange [" << (xmin > 0 ? xmin / 2 : 1) << ":" << (xmax > 0 ? xmax * 2 : 2) << "]\n";
  s << "set xtics (" << size_tics(xmin > 0 ? xmin / 2 : 1, xmax > 0 ? xmax * 2 : 2) << ")\n";
  s << "set xlabel 'message size'\n";
  if (used.empty()) {
    s << "set label 1 'no results' at graph 0.5,0.5 center\nunset logscale y\nset yrange [0:1]\nplot NaN notitle\n";
  }
  int block = 0;
  for (const Panel* p : used) {
    std::vector<std::string> names;
    for (const TestResult* t : p->tests) {
      std::string b("$d");
      b.append(std::to_string(block++));
      s << b << " << EOD\n";
      for (const Row& row : t->rows)
        if (p->value(row) > 0) s << row.bytes << " " << p->value(row) << "\n";
      s << "EOD\n";
      names.push_back(b);
    }
    s << "set ylabel '" << p->ylabel << "'\nplot ";
    for (size_t i = 0; i < p->tests.size(); i++)
      s << (i ? ", " : "") << names[i] << " using 1:2 with linespoints lw 1.5 pt 7 ps 0.7 title '"
        << name(p->tests[i]->test) << "'";
    s << "\n";
  }
  s << "unset multiplot\nset output\n";
  return s.str();
}

bool is_png(const std::string& path) {
  unsigned char head[8] = {};
  std::ifstream f(path, std::ios::binary);
  return f.read(reinterpret_cast<char*>(head), sizeof head) && std::memcmp(head, kPngMagic, sizeof head) == 0;
}

}  // namespace

std::string find_gnuplot() {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    const size_t colon = dirs.find(':', start);
    std::string candidate(dirs, start, colon == std::string::npos ? std::string::npos : colon - start);
    if (candidate.empty()) candidate.push_back('.');  // an empty PATH entry is the current directory
    candidate.append("/gnuplot");
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return {};
}

bool write_plot(const std::string& path, const RunReport& r, const std::string& gnuplot, std::string* error) {
  char tmpl[] = "/tmp/ndperf-plot.XXXXXX";
  const int fd = mkstemp(tmpl);
  if (fd < 0) {
    *error = "cannot create a temporary file for the gnuplot script";
    return false;
  }
  const std::string text = script(path, r);
  const bool written = ::write(fd, text.data(), text.size()) == ssize_t(text.size());
  ::close(fd);
  if (!written) {
    unlink(tmpl);
    *error = "cannot write the gnuplot script";
    return false;
  }
  char* argv[] = {const_cast<char*>(gnuplot.c_str()), tmpl, nullptr};
  pid_t pid = 0;
  int status = 0;
  const int rc = posix_spawn(&pid, gnuplot.c_str(), nullptr, nullptr, argv, environ);
  if (rc == 0) waitpid(pid, &status, 0);
  unlink(tmpl);
  if (rc != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    *error = "gnuplot failed (its messages are above)";
    return false;
  }
  if (!is_png(path)) {
    *error = "gnuplot wrote no PNG to " + path;
    return false;
  }
  return true;
}

}  // namespace ndnic::ndperf
