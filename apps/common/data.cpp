#include "apps/common/data.h"

namespace qtool {

void add_data_flags(CLI::App& app, DataFlags& flags) {
  app.add_option("--data", flags.dirs, "dataset directory: .npy files, sample folders or ONNX test-data layout")
      ->check(CLI::ExistingDirectory);
  app.add_option("--input", flags.inputs, "one sample given as NAME=FILE (.npy or .pb); repeat per model input");
  app.add_option("--limit", flags.limit, "read only the first N samples")->check(CLI::NonNegativeNumber);
}

quant::Expected<std::vector<quant::io::SampleSource>> collect_samples(const DataFlags& flags) {
  if (flags.dirs.empty() && flags.inputs.empty()) return quant::Status::bad_input("no data: give --data DIR or --input NAME=FILE");
  if (!flags.dirs.empty() && !flags.inputs.empty())
    return quant::Status::bad_input("--data and --input cannot be combined");
  std::vector<quant::io::SampleSource> all;
  if (!flags.inputs.empty()) {
    quant::io::SampleSource one;
    one.stem = "input";
    for (const auto& spec : flags.inputs) {
      auto eq = spec.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
        return quant::Status::bad_input("--input '" + spec + "' is not NAME=FILE");
      one.files.emplace_back(spec.substr(0, eq), spec.substr(eq + 1));
    }
    all.push_back(std::move(one));
    return all;
  }
  for (const auto& dir : flags.dirs) {
    quant::io::DatasetOptions opt;
    opt.limit = flags.limit ? flags.limit - std::min(flags.limit, all.size()) : 0;
    if (flags.limit && opt.limit == 0) break;
    QT_ASSIGN_OR_RETURN(auto samples, quant::io::list_samples(dir, opt));
    for (auto& s : samples) all.push_back(std::move(s));
  }
  return all;
}

}  // namespace qtool
