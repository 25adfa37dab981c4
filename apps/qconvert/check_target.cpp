#include "apps/qconvert/check_target.h"

#include <cstdio>

#include "libquant/onnx/model_io.h"
#include "libquant/target/check.h"

namespace qtool {

quant::Status check_target(const std::string& target, const std::string& model, bool json) {
  auto spec = quant::target::load_target(target);
  if (!spec) {
    // load_target names the flag qconvert and qrun usually read it from.
    std::string message = spec.status().message();
    if (message.rfind("--target ", 0) == 0) message = "--check-target " + message.substr(9);
    return quant::Status::bad_input(message);
  }
  QT_ASSIGN_OR_RETURN(auto graph, quant::onnx_io::load_model(model));
  const quant::target::CheckResult r = quant::target::check_model(*graph, *spec);
  const size_t n = r.violations.size();
  if (json) {
    std::fputs(quant::target::check_json(r, spec->name, model).c_str(), stdout);
  } else {
    for (const auto& v : r.violations) std::printf("%s\n", quant::target::describe(v).c_str());
    for (const auto& note : r.notes) std::printf("note: %s\n", note.c_str());
    auto count = [&](const char* key) { return static_cast<long long>(r.checked.at(key)); };
    std::printf("%s: %zu violation%s of target %s (checked: nodes %lld, activations %lld, weights %lld, biases %lld)\n",
                model.c_str(), n, n == 1 ? "" : "s", spec->name.c_str(), count("nodes"), count("activations"),
                count("weights"), count("biases"));
  }
  // The report on stdout comes before the error line on stderr.
  std::fflush(stdout);
  if (n == 0) return quant::Status::ok();
  return quant::Status::gate_failed(model + ": " + std::to_string(n) + " violation" + (n == 1 ? "" : "s") + " of target " +
                                    spec->name);
}

}  // namespace qtool
