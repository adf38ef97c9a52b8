// The result files: JSON (the schema the bench scripts read), CSV, and a gnuplot PNG. The
// files are opened before the run, so a path that cannot be written fails at once and not
// after minutes of measuring; "-" is stdout, and the tables then go to stderr.
#pragma once

#include <cstdio>
#include <string>

#include "tools/ndperf/options.h"
#include "tools/ndperf/results.h"

namespace ndnic::ndperf {

class OutputFiles {
 public:
  OutputFiles() = default;
  ~OutputFiles();
  OutputFiles(const OutputFiles&) = delete;
  OutputFiles& operator=(const OutputFiles&) = delete;

  /// Opens --json and --csv, checks --plot's gnuplot. False with the reason printed.
  bool open(const Options& o);
  /// Writes every file asked for. False when one could not be written (said why).
  bool write(const RunReport& r);

 private:
  FILE* json_ = nullptr;
  FILE* csv_ = nullptr;
  std::string plot_path_;
};

void write_json(FILE* f, const RunReport& r);
void write_csv(FILE* f, const RunReport& r);

/// The gnuplot executable on PATH, or "" (then `why` says so).
std::string find_gnuplot();
/// Draws bandwidth and latency against message size into a PNG. False with `error` set.
bool write_plot(const std::string& path, const RunReport& r, const std::string& gnuplot, std::string* error);

}  // namespace ndnic::ndperf
