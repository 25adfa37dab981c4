// --data / --input / --limit handling shared by qprofile and qrun.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "libquant/core/status.h"
#include "libquant/core/tensor.h"
#include "libquant/io/dataset.h"

namespace qtool {

struct DataFlags {
  std::vector<std::string> dirs;    // --data DIR (repeatable)
  std::vector<std::string> inputs;  // --input NAME=FILE (one sample)
  size_t limit = 0;                 // --limit N (0: all)
};

void add_data_flags(CLI::App& app, DataFlags& flags);

// Every sample the flags name, in order; an error if there is none.
quant::Expected<std::vector<quant::io::SampleSource>> collect_samples(const DataFlags& flags);

}  // namespace qtool
