#include "libquant/profile/profile.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <nlohmann/json.hpp>

#include "libquant/core/file_util.h"

namespace quant::profile {
namespace {

using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;

constexpr std::string_view kFormatTag = "qtool-profile";

std::string dump(const ordered_json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

ordered_json number_or_null(double v) { return std::isnan(v) ? ordered_json(nullptr) : ordered_json(v); }

ordered_json tensor_to_json(const TensorProfile& t, bool with_channels) {
  const Histogram& h = t.hist;
  ordered_json j;
  j["dtype"] = t.dtype;
  j["shape"] = t.shape;
  j["count"] = h.count();
  j["min"] = number_or_null(h.min());
  j["max"] = number_or_null(h.max());
  j["mean"] = number_or_null(h.mean());
  // The mean alone would not round-trip the sum (mean * count is rounded), and
  // merging shards needs the exact sum.
  j["sum"] = h.sum();
  j["nan"] = h.nan_count();
  j["inf"] = h.inf_count();
  j["histogram"] = {{"lo", h.lo()}, {"hi", h.hi()}, {"counts", h.counts()}};
  if (with_channels && !t.channel_absmax.empty()) {
    // A float printed as a double reads back to the same float.
    ordered_json c = ordered_json::array();
    for (float v : t.channel_absmax) c.push_back(static_cast<double>(v));
    j["channel_absmax"] = std::move(c);
  }
  return j;
}

// Typed, exception-free access to fields; every error names the file and the field path.
class Reader {
 public:
  explicit Reader(const std::string& file) : file_(file) {}

  static std::string join(const std::string& where, const char* key) { return where.empty() ? key : where + "." + key; }
  Status bad(const std::string& where, const std::string& what) const {
    return Status::bad_input(file_ + ": " + where + ": " + what);
  }
  // `where` is the path of `obj` ("" for the top level).
  Expected<const json*> field(const json& obj, const std::string& where, const char* key) const {
    auto it = obj.find(key);
    if (it == obj.end()) return bad(join(where, key), "missing");
    return &*it;
  }
  Expected<const json*> object(const json& obj, const std::string& where, const char* key) const {
    QT_ASSIGN_OR_RETURN(const json* v, field(obj, where, key));
    if (!v->is_object()) return bad(join(where, key), "expected an object");
    return v;
  }
  Expected<std::string> string(const json& obj, const std::string& where, const char* key) const {
    QT_ASSIGN_OR_RETURN(const json* v, field(obj, where, key));
    if (!v->is_string()) return bad(join(where, key), "expected a string");
    return v->get<std::string>();
  }
  Expected<uint64_t> unsigned_int(const json& obj, const std::string& where, const char* key) const {
    QT_ASSIGN_OR_RETURN(const json* v, field(obj, where, key));
    if (!v->is_number_unsigned()) return bad(join(where, key), "expected a non-negative integer");
    return v->get<uint64_t>();
  }
  Expected<double> number(const json& obj, const std::string& where, const char* key) const {
    QT_ASSIGN_OR_RETURN(const json* v, field(obj, where, key));
    if (!v->is_number()) return bad(join(where, key), "expected a number");
    double d = v->get<double>();
    if (!std::isfinite(d)) return bad(join(where, key), "is not a finite number");
    return d;
  }
  // null stands for "no value" (NaN).
  Expected<double> number_or_null(const json& obj, const std::string& where, const char* key) const {
    QT_ASSIGN_OR_RETURN(const json* v, field(obj, where, key));
    if (v->is_null()) return std::numeric_limits<double>::quiet_NaN();
    return number(obj, where, key);
  }

 private:
  const std::string& file_;
};

Expected<std::vector<float>> channel_absmax_from_json(const Reader& r, const json& j, const std::string& where) {
  std::string cwhere = where + ".channel_absmax";
  auto it = j.find("channel_absmax");
  if (!it->is_array()) return r.bad(cwhere, "expected an array of non-negative numbers");
  std::vector<float> out;
  out.reserve(it->size());
  for (const json& v : *it) {
    if (!v.is_number()) return r.bad(cwhere, "expected an array of non-negative numbers");
    const double d = v.get<double>();
    if (!(d >= 0) || !std::isfinite(d) || d > std::numeric_limits<float>::max())
      return r.bad(cwhere, "expected an array of non-negative finite float32 numbers");
    out.push_back(static_cast<float>(d));
  }
  return out;
}

Expected<TensorProfile> tensor_from_json(const Reader& r, const json& j, const std::string& where, int bins, int version) {
  if (!j.is_object()) return r.bad(where, "expected an object");
  TensorProfile t;
  QT_ASSIGN_OR_RETURN(t.dtype, r.string(j, where, "dtype"));
  if (!dtype_from_name(t.dtype)) return r.bad(where + ".dtype", "unknown data type '" + t.dtype + "'");
  QT_ASSIGN_OR_RETURN(const json* shape, r.field(j, where, "shape"));
  if (!shape->is_array()) return r.bad(where + ".shape", "expected an array of integers");
  for (const json& d : *shape) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0)
      return r.bad(where + ".shape", "expected an array of non-negative integers");
    t.shape.push_back(d.get<int64_t>());
  }

  HistogramFields f;
  QT_ASSIGN_OR_RETURN(uint64_t count, r.unsigned_int(j, where, "count"));
  QT_ASSIGN_OR_RETURN(f.min, r.number_or_null(j, where, "min"));
  QT_ASSIGN_OR_RETURN(f.max, r.number_or_null(j, where, "max"));
  QT_ASSIGN_OR_RETURN(double mean, r.number_or_null(j, where, "mean"));
  QT_ASSIGN_OR_RETURN(f.nan_count, r.unsigned_int(j, where, "nan"));
  QT_ASSIGN_OR_RETURN(f.inf_count, r.unsigned_int(j, where, "inf"));
  std::string hwhere = where + ".histogram";
  QT_ASSIGN_OR_RETURN(const json* hist, r.object(j, where, "histogram"));
  QT_ASSIGN_OR_RETURN(f.lo, r.number(*hist, hwhere, "lo"));
  QT_ASSIGN_OR_RETURN(f.hi, r.number(*hist, hwhere, "hi"));
  QT_ASSIGN_OR_RETURN(const json* counts, r.field(*hist, hwhere, "counts"));
  if (!counts->is_array()) return r.bad(hwhere + ".counts", "expected an array of non-negative integers");
  if (counts->size() != static_cast<size_t>(bins))
    return r.bad(hwhere + ".counts", "has " + std::to_string(counts->size()) + " entries, expected " +
                                         std::to_string(bins) + " (bins)");
  f.counts.reserve(counts->size());
  uint64_t total = 0;
  for (const json& c : *counts) {
    if (!c.is_number_unsigned()) return r.bad(hwhere + ".counts", "expected an array of non-negative integers");
    f.counts.push_back(c.get<uint64_t>());
    total += f.counts.back();
  }
  if (total != count)
    return r.bad(where + ".count", "is " + std::to_string(count) + " but histogram.counts add up to " + std::to_string(total));
  // "sum" is optional (hand-written profiles); without it the mean stands in.
  if (j.contains("sum")) {
    QT_ASSIGN_OR_RETURN(f.sum, r.number(j, where, "sum"));
  } else if (count > 0) {
    if (std::isnan(mean)) return r.bad(where + ".mean", "is null but count > 0");
    f.sum = mean * static_cast<double>(count);
  }
  auto hist_or = Histogram::from_fields(std::move(f));
  if (!hist_or) return r.bad(where, hist_or.status().message());
  t.hist = std::move(hist_or).value();
  // Version 1 had no per-channel field: one found there is an unknown extra field, ignored.
  if (version >= 2 && j.contains("channel_absmax")) {
    QT_ASSIGN_OR_RETURN(t.channel_absmax, channel_absmax_from_json(r, j, where));
  }
  return t;
}

}  // namespace

std::string profile_to_json(const Profile& p) {
  ordered_json model;
  model["path"] = p.model_path;
  model["digest"] = p.model_digest;
  model["signature"] = p.graph_signature;
  std::string out = "{\n";
  out += "  \"format\": \"" + std::string(kFormatTag) + "\",\n";
  out += "  \"version\": " + std::to_string(p.version) + ",\n";
  out += "  \"model\": " + dump(model) + ",\n";
  out += "  \"samples\": " + std::to_string(p.samples) + ",\n";
  out += "  \"bins\": " + std::to_string(p.bins) + ",\n";
  out += "  \"tensors\": {";
  bool first = true;
  for (const auto& [name, t] : p.tensors) {
    out += first ? "\n    " : ",\n    ";
    first = false;
    out += dump(ordered_json(name)) + ": " + dump(tensor_to_json(t, p.version >= 2));
  }
  out += p.tensors.empty() ? "}\n}\n" : "\n  }\n}\n";
  return out;
}

Expected<Profile> profile_from_json(std::string_view text, const std::string& path) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {
    // nlohmann prefixes "[json.exception.parse_error.101] "; the rest says where and why.
    std::string what = e.what();
    size_t cut = what.find("] ");
    return Status::bad_input(path + ": not valid JSON (" + (cut == std::string::npos ? what : what.substr(cut + 2)) + ")");
  }
  Reader r(path);
  if (!root.is_object()) return Status::bad_input(path + ": not a qtool profile (the top level is not a JSON object)");
  auto format = root.find("format");
  if (format == root.end() || !format->is_string() || format->get<std::string>() != kFormatTag)
    return Status::bad_input(path + ": not a qtool profile (\"format\" is not \"qtool-profile\")");

  Profile p;
  QT_ASSIGN_OR_RETURN(const json* version, r.field(root, "", "version"));
  if (!version->is_number_integer() || version->get<int64_t>() < 1 || version->get<int64_t>() > kProfileVersion) {
    // Print only scalars: dumping a hostile nested value would recurse without bound.
    std::string shown = version->is_primitive() ? version->dump(-1, ' ', false, json::error_handler_t::replace) : "(not a number)";
    if (shown.size() > 40) shown = shown.substr(0, 40) + "...";
    return r.bad("version", "unsupported profile version " + shown + " (this qtool reads versions 1 and 2)");
  }
  p.version = static_cast<int>(version->get<int64_t>());
  QT_ASSIGN_OR_RETURN(const json* model, r.object(root, "", "model"));
  QT_ASSIGN_OR_RETURN(p.model_path, r.string(*model, "model", "path"));
  QT_ASSIGN_OR_RETURN(p.model_digest, r.string(*model, "model", "digest"));
  QT_ASSIGN_OR_RETURN(p.graph_signature, r.string(*model, "model", "signature"));
  QT_ASSIGN_OR_RETURN(uint64_t samples, r.unsigned_int(root, "", "samples"));
  if (samples > static_cast<uint64_t>(INT64_MAX)) return r.bad("samples", "is too large");
  p.samples = static_cast<int64_t>(samples);
  QT_ASSIGN_OR_RETURN(uint64_t bins, r.unsigned_int(root, "", "bins"));
  if (bins < 1 || bins > static_cast<uint64_t>(Histogram::kMaxBins))
    return r.bad("bins", "must be between 1 and " + std::to_string(Histogram::kMaxBins) + ", is " + std::to_string(bins));
  p.bins = static_cast<int>(bins);
  QT_ASSIGN_OR_RETURN(const json* tensors, r.object(root, "", "tensors"));
  for (const auto& [name, value] : tensors->items()) {
    std::string where = "tensors[" + json(name).dump(-1, ' ', false, json::error_handler_t::replace) + "]";
    QT_ASSIGN_OR_RETURN(TensorProfile t, tensor_from_json(r, value, where, p.bins, p.version));
    p.tensors.emplace(name, std::move(t));
  }
  return p;
}

void merge_tensors(std::map<std::string, TensorProfile>& into, std::map<std::string, TensorProfile>&& part) {
  for (auto& [name, tp] : part) {
    auto it = into.find(name);
    if (it == into.end()) {
      into.emplace(name, std::move(tp));
    } else {
      it->second.hist = Histogram::merge(it->second.hist, tp.hist);
      std::vector<float>& c = it->second.channel_absmax;
      if (c.size() != tp.channel_absmax.size()) {
        c.clear();
      } else {
        for (size_t i = 0; i < c.size(); ++i) c[i] = std::max(c[i], tp.channel_absmax[i]);
      }
    }
  }
}

void merge_into(Profile& into, Profile&& other) {
  into.version = std::min(into.version, other.version);
  merge_tensors(into.tensors, std::move(other.tensors));
  into.samples += other.samples;
  if (other.bins != into.bins) {
    into.bins = std::max(into.bins, other.bins);
    for (auto& [name, tp] : into.tensors)
      if (tp.hist.bins() != into.bins) tp.hist = Histogram::merge(tp.hist, Histogram(into.bins));
  }
}

Status save_profile(const Profile& profile, const std::string& path) {
  // A file that its own reader would refuse must not be written.
  for (const auto& [name, t] : profile.tensors) {
    if (t.hist.bins() != profile.bins)
      return Status::internal(path + ": tensor '" + name + "' has " + std::to_string(t.hist.bins()) +
                              " bins but the profile declares " + std::to_string(profile.bins));
  }
  return write_file_atomic(path, profile_to_json(profile));
}

Expected<Profile> load_profile(const std::string& path) {
  QT_ASSIGN_OR_RETURN(std::string text, read_file(path));
  return profile_from_json(text, path);
}

}  // namespace quant::profile
