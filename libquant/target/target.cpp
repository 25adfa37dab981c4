#include "libquant/target/target.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "libquant/core/file_util.h"

namespace quant::target {

// Defined in the source CMake generates from targets/*.json.
struct BuiltinTargetText {
  const char* name;
  const char* json;
};
extern const BuiltinTargetText kBuiltinTargetTexts[];
extern const size_t kBuiltinTargetCount;

namespace {

using nlohmann::json;

// Reads one object's fields, refusing unknown keys and wrong types; every
// error names the field by its dotted path.
class Fields {
 public:
  Fields(const json& j, std::string path, const std::string& origin) : j_(j), path_(std::move(path)), origin_(origin) {}

  Status check_object() const {
    if (!j_.is_object()) return error(path_.empty() ? "the file" : path_, "must be a JSON object");
    return Status::ok();
  }
  Status only(std::initializer_list<const char*> keys) const {
    std::set<std::string> allowed(keys.begin(), keys.end());
    for (auto it = j_.begin(); it != j_.end(); ++it)
      if (!allowed.count(it.key())) return error(name(it.key()), "unknown field");
    return Status::ok();
  }
  bool has(const char* key) const { return j_.contains(key); }
  const json& at(const char* key) const { return j_.at(key); }
  std::string name(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  Status error(const std::string& field, const std::string& what) const {
    return Status::bad_input(origin_ + ": " + field + ": " + what);
  }

  Expected<std::string> string(const char* key, bool required = false) const {
    if (!has(key)) {
      if (required) return error(name(key), "missing");
      return std::string();
    }
    if (!at(key).is_string()) return error(name(key), "must be a string");
    return at(key).get<std::string>();
  }
  Expected<std::string> one_of(const char* key, std::initializer_list<const char*> values, const std::string& fallback) const {
    QT_ASSIGN_OR_RETURN(std::string v, string(key));
    if (!has(key)) return fallback;
    std::string list;
    for (const char* option : values) {
      if (v == option) return v;
      list += (list.empty() ? "" : ", ") + std::string(option);
    }
    return error(name(key), "'" + v + "' is not one of " + list);
  }
  Expected<std::vector<std::string>> strings(const char* key) const {
    std::vector<std::string> out;
    if (!has(key)) return out;
    if (!at(key).is_array()) return error(name(key), "must be an array of op type names");
    for (const auto& e : at(key)) {
      if (!e.is_string() || e.get<std::string>().empty()) return error(name(key), "must be an array of op type names");
      out.push_back(e.get<std::string>());
    }
    return out;
  }
  Expected<Fields> object(const char* key) const {
    static const json kEmpty = json::object();
    Fields f(has(key) ? at(key) : kEmpty, name(key), origin_);
    QT_RETURN_IF_ERROR(f.check_object());
    return f;
  }
  const json& raw() const { return j_; }

 private:
  const json& j_;
  std::string path_;
  const std::string& origin_;
};

Expected<DType> type_field(const Fields& f, const char* key, std::initializer_list<const char*> allowed, DType fallback) {
  if (!f.has(key)) return fallback;
  QT_ASSIGN_OR_RETURN(std::string v, f.one_of(key, allowed, ""));
  return *dtype_from_name(v);
}

Status parse_weights(const Fields& w, TargetSpec& t) {
  QT_RETURN_IF_ERROR(w.only({"type", "depthwise_type", "range", "first_layer_range", "granularity", "granularity_by_op", "pair_bound", "inputs_by_op"}));
  QT_ASSIGN_OR_RETURN(t.weights, type_field(w, "type", {"int8", "uint8"}, DType::Int8));
  QT_ASSIGN_OR_RETURN(t.depthwise_weights, type_field(w, "depthwise_type", {"int8", "uint8"}, DType::Undefined));
  QT_ASSIGN_OR_RETURN(std::string gran, w.one_of("granularity", {"per-channel", "per-tensor"}, "per-channel"));
  t.per_channel = gran == "per-channel";
  QT_ASSIGN_OR_RETURN(Fields by_op, w.object("granularity_by_op"));
  for (auto it = by_op.raw().begin(); it != by_op.raw().end(); ++it) {
    if (!it->is_string() || (*it != "per-channel" && *it != "per-tensor"))
      return w.error(by_op.name(it.key()), "must be \"per-channel\" or \"per-tensor\"");
    t.per_channel_by_op[it.key()] = *it == "per-channel";
  }
  t.weight_max = 127;
  // Weights are symmetric (DESIGN Numerics): a range is [-m, m] of the signed
  // values (uint8 weights: offsets from their zero point 128).
  auto range = [&](const char* key, int32_t& out) -> Status {
    if (!w.has(key)) return Status::ok();
    const json& r = w.at(key);
    if (!r.is_array() || r.size() != 2 || !r[0].is_number_integer() || !r[1].is_number_integer())
      return w.error(w.name(key), "must be [min, max], two integers");
    const int64_t lo = r[0].get<int64_t>(), hi = r[1].get<int64_t>();
    if (lo != -hi || hi < 1 || hi > 127)
      return w.error(w.name(key), "must be symmetric, [-m, m] with 1 <= m <= 127, got [" + std::to_string(lo) + ", " +
                                      std::to_string(hi) + "]");
    out = static_cast<int32_t>(hi);
    return Status::ok();
  };
  QT_RETURN_IF_ERROR(range("range", t.weight_max));
  QT_RETURN_IF_ERROR(range("first_layer_range", t.first_layer_weight_max));
  QT_ASSIGN_OR_RETURN(Fields inputs, w.object("inputs_by_op"));
  for (auto it = inputs.raw().begin(); it != inputs.raw().end(); ++it) {
    if (!it->is_number_integer() || it->get<int64_t>() < 1 || it->get<int64_t>() > 8)
      return w.error(inputs.name(it.key()), "must be an input index in [1, 8]");
    t.weight_inputs[it.key()] = static_cast<int>(it->get<int64_t>());
  }
  if (w.has("pair_bound")) {
    const json& b = w.at("pair_bound");
    if (!b.is_number_integer() || b.get<int64_t>() < 2 || b.get<int64_t>() > 254)
      return w.error(w.name("pair_bound"), "must be an integer in [2, 254]");
    if (t.weights != DType::Int8) return w.error(w.name("pair_bound"), "applies to int8 weights only");
    t.weight_pair_bound = static_cast<int32_t>(b.get<int64_t>());
  }
  return Status::ok();
}

Status parse_quantize(const Fields& q, TargetSpec& t) {
  QT_RETURN_IF_ERROR(q.only({"format", "activations", "weights", "bias", "ops", "shares_input_params", "same_params",
                             "fixed_output_params", "placement", "matmul_activation_b"}));
  QT_ASSIGN_OR_RETURN(t.format, q.one_of("format", {"qdq", "qoperator"}, "qdq"));
  QT_ASSIGN_OR_RETURN(Fields a, q.object("activations"));
  QT_RETURN_IF_ERROR(a.only({"type", "schema", "mixed_type"}));
  QT_ASSIGN_OR_RETURN(t.activations, type_field(a, "type", {"uint8", "int8", "uint16", "int16"}, DType::UInt8));
  QT_ASSIGN_OR_RETURN(t.mixed_activations, type_field(a, "mixed_type", {"uint16", "int16"}, DType::Undefined));
  if (t.mixed_activations != DType::Undefined && dtype_size(t.activations) != 1)
    return a.error(a.name("mixed_type"), "a wider type for 8-bit activations; these are already " +
                                             std::string(dtype_name(t.activations)));
  QT_ASSIGN_OR_RETURN(std::string schema,
                      a.one_of("schema", {"asymmetric", "symmetric", "symmetric-uint8", "power2-scale"}, "asymmetric"));
  t.schema = *calib::schema_from_name(schema);
  QT_ASSIGN_OR_RETURN(Fields w, q.object("weights"));
  QT_RETURN_IF_ERROR(parse_weights(w, t));
  // "float": the bias stays float (TensorRT adds it in float after dequantizing).
  if (q.has("bias") && q.at("bias") == "float") {
    t.bias = DType::Float32;
  } else {
    QT_ASSIGN_OR_RETURN(t.bias, type_field(q, "bias", {"int32", "int64", "float"}, DType::Int32));
  }
  QT_ASSIGN_OR_RETURN(t.ops, q.strings("ops"));
  QT_ASSIGN_OR_RETURN(t.shares_input_params, q.strings("shares_input_params"));
  QT_ASSIGN_OR_RETURN(t.same_params, q.strings("same_params"));
  QT_ASSIGN_OR_RETURN(t.placement, q.one_of("placement", {"all", "inputs"}, "all"));
  if (q.has("matmul_activation_b")) {
    QT_ASSIGN_OR_RETURN(Fields b, q.object("matmul_activation_b"));
    QT_RETURN_IF_ERROR(b.only({"type", "schema"}));
    if (!b.has("type")) return b.error(b.name("type"), "missing");
    QT_ASSIGN_OR_RETURN(t.matmul_b_type, type_field(b, "type", {"uint8", "int8", "uint16", "int16"}, DType::Undefined));
    QT_ASSIGN_OR_RETURN(std::string bs, b.one_of("schema", {"asymmetric", "symmetric"}, "symmetric"));
    t.matmul_b_schema = *calib::schema_from_name(bs);
  }
  QT_ASSIGN_OR_RETURN(Fields fixed, q.object("fixed_output_params"));
  for (auto it = fixed.raw().begin(); it != fixed.raw().end(); ++it) {
    const json& v = *it;
    const bool ok = v.is_object() && v.size() == 2 && v.contains("scale") && v.contains("zero_point") &&
                    v["scale"].is_number() && v["zero_point"].is_number_integer();
    if (!ok) return q.error(fixed.name(it.key()), "must be {\"scale\": S, \"zero_point\": Z}");
    const double s = v["scale"].get<double>();
    if (!(s > 0) || !std::isfinite(static_cast<float>(s))) return q.error(fixed.name(it.key()) + ".scale", "must be a positive float32");
    t.fixed_output_params[it.key()] = {static_cast<float>(s), static_cast<int32_t>(v["zero_point"].get<int64_t>())};
  }
  return Status::ok();
}

Status parse_compute(const Fields& c, TargetSpec& t) {
  QT_RETURN_IF_ERROR(c.only({"dot_product", "pair_order", "requantization", "qdq_int8_activations", "softmax"}));
  QT_ASSIGN_OR_RETURN(std::string softmax, c.one_of("softmax", {"onnxruntime-qlinear", "float"}, "float"));
  t.onnxruntime_qlinear_softmax = softmax == "onnxruntime-qlinear";
  QT_ASSIGN_OR_RETURN(std::string dot, c.one_of("dot_product", {"exact-int32", "u8s8-pairs-saturate-int16"}, "exact-int32"));
  t.dot = dot == "exact-int32" ? kernels::DotArithmetic::Exact : kernels::DotArithmetic::U8S8PairsSaturateInt16;
  QT_ASSIGN_OR_RETURN(std::string order, c.one_of("pair_order", {"onnxruntime-mlas"}, "onnxruntime-mlas"));
  if (c.has("pair_order") && t.dot == kernels::DotArithmetic::Exact)
    return c.error(c.name("pair_order"), "applies only to a saturating dot_product");
  QT_ASSIGN_OR_RETURN(std::string rq, c.one_of("requantization", {"float", "fixed-point"}, "float"));
  t.requant = rq == "float" ? kernels::RequantMode::Float : kernels::RequantMode::FixedPoint;
  QT_ASSIGN_OR_RETURN(std::string s8, c.one_of("qdq_int8_activations", {"as-is", "as-uint8"}, "as-is"));
  t.qdq_int8_activations_as_uint8 = s8 == "as-uint8";
  return Status::ok();
}

// Whether a dotted rule path ("quantize.weights.range") names a field of j.
bool rule_exists(const json& j, const std::string& path) {
  const json* at = &j;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!at->is_object() || !at->contains(key)) return false;
    at = &(*at)[key];
    if (dot == std::string::npos) return true;
    start = dot + 1;
  }
  return false;
}

bool looks_like_file(const std::string& s) {
  return s.find('/') != std::string::npos || (s.size() > 5 && s.compare(s.size() - 5, 5, ".json") == 0);
}

}  // namespace

Expected<TargetSpec> parse_target(const std::string& json_text, const std::string& origin) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::parse_error& e) {
    return Status::bad_input(origin + ": not valid JSON: " + std::string(e.what()));
  }
  Fields top(j, "", origin);
  QT_RETURN_IF_ERROR(top.check_object());
  QT_RETURN_IF_ERROR(top.only({"$schema", "name", "description", "sources", "quantize", "compute"}));
  TargetSpec t;
  QT_ASSIGN_OR_RETURN(t.name, top.string("name", true));
  if (t.name.empty()) return top.error("name", "must not be empty");
  QT_ASSIGN_OR_RETURN(t.description, top.string("description"));
  QT_ASSIGN_OR_RETURN(Fields q, top.object("quantize"));
  QT_RETURN_IF_ERROR(parse_quantize(q, t));
  QT_ASSIGN_OR_RETURN(Fields c, top.object("compute"));
  QT_RETURN_IF_ERROR(parse_compute(c, t));
  QT_ASSIGN_OR_RETURN(Fields src, top.object("sources"));
  for (auto it = src.raw().begin(); it != src.raw().end(); ++it) {
    if (!it->is_string() || it->get<std::string>().empty()) return top.error(src.name(it.key()), "must be a citation (a non-empty string)");
    if (!rule_exists(j, it.key())) return top.error(src.name(it.key()), "cites a rule the file does not set");
    t.sources[it.key()] = it->get<std::string>();
  }
  t.source = origin;
  return t;
}

std::vector<TargetSpec> builtin_targets() {
  std::vector<TargetSpec> out;
  for (size_t i = 0; i < kBuiltinTargetCount; ++i) {
    auto t = parse_target(kBuiltinTargetTexts[i].json, std::string("targets/") + kBuiltinTargetTexts[i].name + ".json");
    // The build's own files; tests/target/test_target.cpp parses every one.
    if (t) t->source = "built-in", out.push_back(std::move(*t));
  }
  std::sort(out.begin(), out.end(), [](const TargetSpec& a, const TargetSpec& b) { return a.name < b.name; });
  return out;
}

Expected<TargetSpec> load_target(const std::string& name_or_file) {
  if (!looks_like_file(name_or_file)) {
    std::string names;
    for (size_t i = 0; i < kBuiltinTargetCount; ++i) {
      if (name_or_file == kBuiltinTargetTexts[i].name) {
        QT_ASSIGN_OR_RETURN(TargetSpec t, parse_target(kBuiltinTargetTexts[i].json, "targets/" + name_or_file + ".json"));
        t.source = "built-in";
        return t;
      }
      names += (names.empty() ? "" : ", ") + std::string(kBuiltinTargetTexts[i].name);
    }
    return Status::bad_input("--target '" + name_or_file + "': no built-in target of that name (built-in: " + names +
                             "; a file path needs a '/' or a .json suffix)");
  }
  QT_ASSIGN_OR_RETURN(std::string text, read_file(name_or_file));
  return parse_target(text, name_or_file);
}

std::string target_summary(const TargetSpec& t) {
  json j;
  j["name"] = t.name;
  j["source"] = t.source;
  j["description"] = t.description;
  j["format"] = t.format;
  j["activations"] = {{"type", std::string(dtype_name(t.activations))}, {"schema", std::string(calib::schema_name(t.schema))}};
  if (t.mixed_activations != DType::Undefined) j["activations"]["mixed_type"] = std::string(dtype_name(t.mixed_activations));
  j["weights"] = {{"type", std::string(dtype_name(t.weights))},
                  {"depthwise_type", std::string(dtype_name(t.depthwise_weights == DType::Undefined ? t.weights : t.depthwise_weights))},
                  {"range", {-t.weight_max, t.weight_max}},
                  {"granularity", t.per_channel ? "per-channel" : "per-tensor"},
                  {"pair_bound", t.weight_pair_bound}};
  if (t.first_layer_weight_max) j["weights"]["first_layer_range"] = {-t.first_layer_weight_max, t.first_layer_weight_max};
  j["bias"] = t.bias == DType::Float32 ? std::string("float") : std::string(dtype_name(t.bias));
  j["placement"] = t.placement;
  if (!t.same_params.empty()) j["same_params"] = t.same_params;
  if (t.matmul_b_type != DType::Undefined)
    j["matmul_activation_b"] = {{"type", std::string(dtype_name(t.matmul_b_type))}, {"schema", std::string(calib::schema_name(t.matmul_b_schema))}};
  if (!t.weight_inputs.empty()) j["weights"]["inputs_by_op"] = t.weight_inputs;
  j["dot_product"] = t.dot == kernels::DotArithmetic::Exact ? "exact-int32" : "u8s8-pairs-saturate-int16";
  j["requantization"] = t.requant == kernels::RequantMode::Float ? "float" : "fixed-point";
  j["qdq_int8_activations"] = t.qdq_int8_activations_as_uint8 ? "as-uint8" : "as-is";
  j["softmax"] = t.onnxruntime_qlinear_softmax ? "onnxruntime-qlinear" : "float";
  return j.dump();
}

}  // namespace quant::target
