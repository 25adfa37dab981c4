#include "apps/qprofile/merge.h"

#include "libquant/profile/profile.h"

namespace qtool {

quant::Status merge_profiles(const std::vector<std::string>& inputs, const std::string& output) {
  if (inputs.empty()) return quant::Status::bad_input("merge needs at least one profile");
  QT_ASSIGN_OR_RETURN(auto merged, quant::profile::load_profile(inputs[0]));
  for (size_t i = 1; i < inputs.size(); ++i) {
    QT_ASSIGN_OR_RETURN(auto next, quant::profile::load_profile(inputs[i]));
    // The signature catches another graph; the digest catches the same graph with
    // other weights, whose activations must not be mixed either.
    if (next.graph_signature != merged.graph_signature || next.model_digest != merged.model_digest) {
      const char* what = next.graph_signature != merged.graph_signature ? "graph signatures" : "model digests";
      return quant::Status::bad_input(inputs[i] + ": profile of another model (" + next.model_path + ") than " +
                                      inputs[0] + " (" + merged.model_path + "); their " + what + " differ");
    }
    quant::profile::merge_into(merged, std::move(next));
  }
  return quant::profile::save_profile(merged, output);
}

}  // namespace qtool
