// A profile: per-activation histograms of one float model over a data set,
// written by `qprofile`, read by `qconvert` and `qprofile merge/show`.
// The JSON format is documented in profiles/README.md.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "libquant/core/status.h"
#include "libquant/core/tensor.h"
#include "libquant/profile/histogram.h"

namespace quant::profile {

struct TensorProfile {
  std::string dtype;  // dtype_name() of the activation, e.g. "float32"
  Dims shape;         // as observed on the first sample
  Histogram hist;
  // Version 2: for the first input (A) of a MatMul or Gemm, max |x| over every
  // finite value of each index of the last axis (the channel K that
  // SmoothQuant scales, calib/smooth_quant.h); empty for other activations
  // and in version 1 profiles.
  std::vector<float> channel_absmax = {};
};

// Version 2 added TensorProfile::channel_absmax; version 1 still reads (without it).
constexpr int kProfileVersion = 2;

struct Profile {
  int version = kProfileVersion;  // as read; the writer writes it (a merge takes the lowest)
  std::string model_path;
  std::string model_digest;     // sha256 of the model file
  std::string graph_signature;  // sha256 of a canonical text: op types + input/output names of every node in order
  int64_t samples = 0;
  int bins = 2048;
  std::map<std::string, TensorProfile> tensors;
};

// One tensor per line, so that diffs and `grep` stay readable. Doubles are
// printed in their shortest round-trip form; NaN min/max/mean print as null.
// Names that are not valid UTF-8 have the offending bytes replaced by U+FFFD.
std::string profile_to_json(const Profile& profile);
// Every malformed input (not JSON, wrong format tag, unknown version, missing
// field, wrong type, counts length != bins, lo > hi, ...) is bad_input naming
// `path_for_errors` and the field.
Expected<Profile> profile_from_json(std::string_view text, const std::string& path_for_errors);

// Folds `part` into `into`: a tensor both hold gets Histogram::merge (exact on the
// lattice), one only `part` holds is added. Used for shards and for per-thread chunks.
// Channel absmax merge element-wise by max; a tensor for which one side has none
// (or another length) keeps none, since a partial maximum would understate it.
void merge_tensors(std::map<std::string, TensorProfile>& into, std::map<std::string, TensorProfile>&& part);

// Adds `other`'s samples and tensors to `into`; when the bin counts differ every
// histogram moves to the larger (exactly: coarser lattice cells are unions of finer ones).
// The caller checks that both come from the same model. The result has the lower
// of the two versions.
void merge_into(Profile& into, Profile&& other);

// Atomic; refuses (internal error) a tensor whose bin count differs from profile.bins.
Status save_profile(const Profile& profile, const std::string& path);
Expected<Profile> load_profile(const std::string& path);

}  // namespace quant::profile
