// Each rewrite cites the Changelog entry (onnx/onnx docs/Changelog.md, "<Op>-<version>")
// whose change it undoes; ops whose versions between 7 and 13 only widened the
// types, added attributes whose default keeps the old behaviour or allowed
// negative axes and indices are listed in kUnchanged and only change opset.
#include "libquant/passes/opset_upgrade.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "libquant/onnx/model_io.h"
#include "libquant/passes/graph_edit.h"

namespace quant::passes {
namespace {

// Versions 7..13 of these ops read the same models the same way.
const std::set<std::string> kUnchanged = {
    "Abs", "Acos", "Acosh", "Add", "And", "ArgMax", "ArgMin", "Asin", "Asinh", "Atan", "Atanh", "AveragePool",
    "BitShift", "Cast", "Ceil", "Celu", "Compress", "Concat", "Constant", "ConstantOfShape", "Conv", "ConvInteger",
    "ConvTranspose", "Cos", "Cosh", "CumSum", "DepthToSpace", "DequantizeLinear", "Det", "Div", "DynamicQuantizeLinear",
    "Einsum", "Elu", "Equal", "Erf", "Exp", "Expand", "EyeLike", "Flatten", "Floor", "GRU", "Gather", "GatherElements",
    "GatherND", "Gemm", "GlobalAveragePool", "GlobalLpPool", "GlobalMaxPool", "Greater", "GreaterOrEqual",
    "HardSigmoid", "Identity", "If", "InstanceNormalization", "IsInf", "IsNaN", "LRN", "LSTM", "LeakyRelu", "Less",
    "LessOrEqual", "Log", "Loop", "LpNormalization", "MatMul", "MatMulInteger", "Max", "MaxPool", "MaxRoiPool", "Mean",
    "MeanVarianceNormalization", "Min", "Mod", "Mul", "Multinomial", "Neg", "NonZero", "Not", "OneHot", "Or", "PRelu",
    "Pow", "QLinearConv", "QLinearMatMul", "QuantizeLinear", "RNN", "RandomNormal", "RandomNormalLike",
    "RandomUniform", "RandomUniformLike", "Range", "Reciprocal", "ReduceL1", "ReduceL2", "ReduceLogSum",
    "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSumSquare", "Relu", "Reshape",
    "ReverseSequence", "RoiAlign", "Round", "ScatterElements", "Selu", "Shape", "Shrink", "Sigmoid", "Sign", "Sin", "Sinh", "Size",
    "Softplus", "Softsign", "SpaceToDepth", "Sqrt", "Sub", "Sum", "Tan", "Tanh", "ThresholdedRelu", "Tile", "Transpose",
    "Unique", "Where", "Xor"};

struct Edit {
  ir::Graph& g;
  int64_t from, to;
  OpsetUpgrade& out;
  const RankHint& rank_hint;

  ir::Value* ints(const ir::Node& n, const std::string& what, const std::vector<int64_t>& v) {
    return add_constant(g, n.name + "_" + what, Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v));
  }
  ir::Value* float_scalar(const ir::Node& n, const std::string& what, float v) {
    return add_constant(g, n.name + "_" + what, Tensor::from_vector<float>({}, {v}));
  }
  ir::Value* value(const std::string& base, DType dtype) {
    ir::Value* v = g.add_value(g.unique_name(base));
    v->dtype = dtype;
    return v;
  }
  void note(const ir::Node& n, const std::string& what) { out.notes.push_back(n.describe() + ": " + what); }
  // Moves the ints attribute `attr` to input `index` (padding skipped optional inputs).
  void attribute_to_input(ir::Node& n, const std::string& attr, size_t index) {
    const ir::Attribute* a = n.find_attribute(attr);
    if (!a) return;
    n.inputs.resize(std::max(n.inputs.size(), index + 1), nullptr);
    n.inputs[index] = ints(n, attr, a->ints);
    n.attributes.erase(attr);
  }
  // x -> Flatten(axis) -> [2-D node n] -> Reshape(Shape(x)) -> y: n's
  // input and output become 2-D values holding the same elements as x and y.
  void around_2d(ir::Node& n, int64_t axis) {
    ir::Value* x = n.inputs[0];
    ir::Value* y = n.outputs[0];
    ir::Value* x2 = value(x->name() + "_2d", x->dtype);
    ir::Node* flatten = g.insert_node(&n, "Flatten", {x}, {x2}, g.unique_name(n.name + "_Flatten"));
    flatten->attributes["axis"] = ir::Attribute::of_int(axis);
    ir::Value* shape = value(x->name() + "_shape", DType::Int64);
    g.insert_node(&n, "Shape", {x}, {shape}, g.unique_name(n.name + "_Shape"));
    ir::Value* y2 = value(y->name() + "_2d", y->dtype);
    n.inputs[0] = x2;
    n.outputs[0] = y2;
    y2->producer = &n;
    g.insert_node(&n, "Reshape", {y2, shape}, {y}, g.unique_name(n.name + "_Reshape"));
    out.same_values.emplace_back(x2->name(), x->name());
    out.same_values.emplace_back(y2->name(), y->name());
  }
};

// Keeps the first element only (erase rather than resize: GCC 12 at -O3 reads
// a shrinking resize as a possible growth and warns with -Warray-bounds).
void keep_first(std::vector<ir::Value*>& v) {
  if (v.size() > 1) v.erase(v.begin() + 1, v.end());
}

bool float_or_unknown(const ir::Value* v) { return !v || v->dtype == DType::Float32 || v->dtype == DType::Undefined; }

// Upsample-10 deprecated Upsample for Resize-10 (same inputs, same
// semantics); Upsample-9 had made scales an input (Upsample-7: attribute).
// Resize-11 defaults to half_pixel coordinates: Upsample's are asymmetric
// with floor rounding for nearest (its scales are >= 1, Upsample-7/9).
std::string upsample_why_not(const ir::Graph&, const ir::Node& n, int64_t from, int64_t) {
  const std::string mode = n.attr_string("mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "bilinear") return "mode '" + mode + "' is not nearest or linear";
  if (from < 9 && !n.find_attribute("scales")) return "Upsample-7 needs a scales attribute";
  if (from >= 9 && !n.input(1)) return "Upsample-9 needs a scales input";
  return "";
}

void set_resize_11(ir::Node& n, ir::Value* x, ir::Value* roi, ir::Value* scales, const std::string& nearest_mode) {
  n.inputs = {x, roi, scales};
  n.attributes["coordinate_transformation_mode"] = ir::Attribute::of_string("asymmetric");
  if (n.attr_string("mode", "nearest") == "nearest") n.attributes["nearest_mode"] = ir::Attribute::of_string(nearest_mode);
}

void upsample_to_resize(Edit& e, ir::Node& n) {
  e.note(n, "became Resize with asymmetric coordinates (Upsample-10 deprecated it for Resize-10)");
  std::string mode = n.attr_string("mode", "nearest");
  if (mode == "bilinear") mode = "linear";
  ir::Value* scales = n.input(1);
  if (e.from < 9) {
    const auto& s = n.find_attribute("scales")->floats;
    scales = add_constant(e.g, n.name + "_scales", Tensor::from_vector<float>({static_cast<int64_t>(s.size())}, s));
  }
  ir::Value* x = n.inputs[0];
  n.op_type = "Resize";
  n.attributes.clear();
  n.attributes["mode"] = ir::Attribute::of_string(mode);
  if (e.to >= 11) {
    set_resize_11(n, x, add_constant(e.g, n.name + "_roi", Tensor(DType::Float32, {0})), scales, "floor");
  } else {
    n.inputs = {x, scales};
  }
}

// Resize-10's nearest rounding is left open by the spec; qrun and ONNX
// Runtime floor when an axis grows and ceil when it shrinks. Resize-11 has
// one nearest_mode for every axis, so the scales must be constants that all
// grow (or keep) or all shrink (or keep) the axes.
std::string resize_nearest_mode(const ir::Node& n) {
  if (n.attr_string("mode", "nearest") != "nearest") return "floor";
  const Tensor* s = ir::constant_data(n.input(1));
  if (!s || s->dtype() != DType::Float32) return "";
  bool grows = false, shrinks = false;
  for (float v : s->values<float>()) {
    grows |= v > 1.0f;
    shrinks |= v < 1.0f;
  }
  return grows && shrinks ? "" : shrinks ? "ceil" : "floor";
}

std::string resize_why_not(const ir::Graph&, const ir::Node& n, int64_t, int64_t) {
  if (!n.input(1)) return "Resize-10 needs a scales input";
  if (resize_nearest_mode(n).empty())
    return "nearest Resize-10 rounds each axis its own way; Resize-11 needs constant scales that all grow or all shrink";
  return "";
}

// Resize-11 added roi and coordinate_transformation_mode (default half_pixel).
void resize_10_to_11(Edit& e, ir::Node& n) {
  const std::string nearest = resize_nearest_mode(n);
  set_resize_11(n, n.inputs[0], add_constant(e.g, n.name + "_roi", Tensor(DType::Float32, {0})), n.inputs[1], nearest);
  e.note(n, "Resize-10 written as Resize-11 with asymmetric coordinates, nearest_mode " + nearest);
}

// Slice-10: starts, ends and axes became inputs (steps added, default 1).
std::string slice_why_not(const ir::Graph&, const ir::Node& n, int64_t, int64_t) {
  return n.find_attribute("starts") && n.find_attribute("ends") ? "" : "Slice-1 needs starts and ends attributes";
}
void slice_to_inputs(Edit& e, ir::Node& n) {
  e.attribute_to_input(n, "starts", 1);
  e.attribute_to_input(n, "ends", 2);
  e.attribute_to_input(n, "axes", 3);
  e.note(n, "starts/ends/axes became inputs (Slice-10)");
}

// Pad-11: pads and the constant value became inputs (the value takes the
// data's type).
std::string pad_why_not(const ir::Graph&, const ir::Node& n, int64_t, int64_t) {
  if (!n.find_attribute("pads")) return "Pad-2 needs a pads attribute";
  if (n.attr_float("value", 0.0f) != 0.0f && !float_or_unknown(n.input(0))) return "a non-zero pad value for non-float data";
  return "";
}
void pad_to_inputs(Edit& e, ir::Node& n) {
  const float value = n.attr_float("value", 0.0f);
  n.attributes.erase("value");
  e.attribute_to_input(n, "pads", 1);
  if (value != 0.0f) n.inputs.push_back(e.float_scalar(n, "constant_value", value));
  e.note(n, "pads and value became inputs (Pad-11)");
}

// Clip-11: min and max became optional inputs of the input's type.
std::string clip_why_not(const ir::Graph&, const ir::Node& n, int64_t, int64_t) {
  return float_or_unknown(n.input(0)) ? "" : "min/max inputs for non-float data";
}
void clip_to_inputs(Edit& e, ir::Node& n) {
  n.inputs.resize(3, nullptr);
  if (n.find_attribute("min")) n.inputs[1] = e.float_scalar(n, "min", n.attr_float("min", 0));
  if (n.find_attribute("max")) n.inputs[2] = e.float_scalar(n, "max", n.attr_float("max", 0));
  while (n.inputs.size() > 1 && !n.inputs.back()) n.inputs.pop_back();
  n.attributes.erase("min");
  n.attributes.erase("max");
  e.note(n, "min/max became inputs (Clip-11)");
}

// Split-13, Squeeze-13, Unsqueeze-13, ReduceSum-13: split/axes became input 1
// (ReduceSum-13's noop_with_empty_axes defaults to reducing every axis, as before).
void split_to_input(Edit& e, ir::Node& n) {
  if (!n.find_attribute("split")) return;
  e.attribute_to_input(n, "split", 1);
  e.note(n, "split became an input (Split-13)");
}
void axes_to_input(Edit& e, ir::Node& n) {
  if (!n.find_attribute("axes")) return;
  e.attribute_to_input(n, "axes", 1);
  e.note(n, "axes became an input (" + n.op_type + "-13)");
}
std::string unsqueeze_why_not(const ir::Graph&, const ir::Node& n, int64_t, int64_t) {
  return n.find_attribute("axes") ? "" : "Unsqueeze-11 needs an axes attribute";
}

// Softmax-13, LogSoftmax-13, Hardmax-13: one axis (default -1) instead of
// coercing the input to 2-D at `axis` (default 1). The same when that axis
// is the last; otherwise the 2-D coercion is spelled out with Flatten/Reshape.
void softmax_one_axis(Edit& e, ir::Node& n) {
  const int64_t axis = n.attr_int("axis", 1);
  const ir::Value* x = n.inputs[0];
  const int64_t rank = x->has_shape ? static_cast<int64_t>(x->shape.size()) : e.rank_hint ? e.rank_hint(*x) : -1;
  n.attributes["axis"] = ir::Attribute::of_int(-1);
  if (axis == -1 || (rank > 0 && axis == rank - 1)) {
    e.note(n, "axis is the last: the same on one axis (" + n.op_type + "-13)");
    return;
  }
  e.around_2d(n, axis);
  e.note(n, "the 2-D coercion at axis " + std::to_string(axis) + " made explicit with Flatten/Reshape (" + n.op_type + "-13)");
}

// BatchNormalization-9 removed spatial; spatial=0 (per (C, D...) element
// parameters) is the 2-D form of spatial=1 on the flattened input.
// consumed_inputs (BatchNormalization-1) and is_test (before -7) are
// leftovers some exporters still write; no later version reads them.
bool bn_per_element(const ir::Node& n) { return n.attr_int("spatial", 1) == 0; }
std::string bn_why_not(const ir::Graph& g, const ir::Node& n, int64_t, int64_t) {
  if (!bn_per_element(n)) return "";
  for (size_t i = 1; i < n.outputs.size(); ++i)
    if (n.outputs[i] && (!g.consumers(n.outputs[i]).empty() || g.is_graph_output(n.outputs[i])))
      return "spatial=0 in training mode (more than one output)";
  for (size_t i = 1; i < 5; ++i)
    if (!ir::constant_data(n.input(i))) return "spatial=0 with parameters that are not constants";
  return "";
}
void bn_drop_legacy(Edit& e, ir::Node& n) {
  const bool per_element = bn_per_element(n);
  for (const char* a : {"spatial", "consumed_inputs", "is_test"}) n.attributes.erase(a);
  if (!per_element) return;
  keep_first(n.outputs);
  for (size_t i = 1; i < 5; ++i) {
    Tensor t = *ir::constant_data(n.inputs[i]);
    t.reshape({t.size()});
    n.inputs[i] = add_constant(e.g, n.inputs[i]->name() + "_flat", std::move(t));
  }
  e.around_2d(n, 1);
  e.note(n, "spatial=0 written as BatchNormalization-9 on the input flattened to 2-D");
}

// Dropout-10 made the mask output bool (it had the data's type); Dropout-12
// made ratio an input. Inference ignores both; an unused mask is dropped.
std::string dropout_why_not(const ir::Graph& g, const ir::Node& n, int64_t, int64_t) {
  const ir::Value* mask = n.outputs.size() > 1 ? n.outputs[1] : nullptr;
  return mask && (!g.consumers(mask).empty() || g.is_graph_output(mask)) ? "its mask output is read (Dropout-10 made it bool)" : "";
}
void dropout_mask(Edit& e, ir::Node& n) {
  n.attributes.erase("is_test");
  if (n.outputs.size() < 2 || !n.outputs[1]) return;
  keep_first(n.outputs);
  e.note(n, "unused mask output dropped (Dropout-10 made it bool)");
}
void dropout_ratio(Edit& e, ir::Node& n) {
  if (!n.find_attribute("ratio")) return;
  keep_first(n.inputs);
  n.inputs.push_back(e.float_scalar(n, "ratio", n.attr_float("ratio", 0.5f)));
  n.attributes.erase("ratio");
  e.note(n, "ratio became an input (Dropout-12)");
}

// TopK-10: k became a 1-element input.
std::string topk_why_not(const ir::Graph&, const ir::Node& n, int64_t, int64_t) {
  return n.find_attribute("k") ? "" : "TopK-1 needs a k attribute";
}
void topk_to_input(Edit& e, ir::Node& n) {
  keep_first(n.inputs);
  n.inputs.push_back(e.ints(n, "k", {n.attr_int("k", 0)}));
  n.attributes.erase("k");
  e.note(n, "k became an input (TopK-10)");
}

// Scatter-11 is deprecated for ScatterElements-11, which has the same inputs,
// attribute and semantics (both take negative indices from 11).
void scatter_to_elements(Edit& e, ir::Node& n) {
  e.note(n, "became ScatterElements (Scatter-11 deprecated it)");
  n.op_type = "ScatterElements";
}

std::string refuse_scan_8(const ir::Graph&, const ir::Node&, int64_t, int64_t) {
  return "Scan-9 dropped Scan-8's batch axis and sequence_lens; that rewrite is not implemented";
}

struct OpChange {
  const char* op;
  int64_t at;  // the version this row upgrades to: applies when from < at <= to
  std::string (*why_not)(const ir::Graph&, const ir::Node&, int64_t from, int64_t to);  // "" when it can
  void (*rewrite)(Edit&, ir::Node&);
};

// Rows of one op are in increasing `at`.
constexpr OpChange kChanges[] = {
    {"BatchNormalization", 9, bn_why_not, bn_drop_legacy},
    {"Clip", 11, clip_why_not, clip_to_inputs},
    {"Dropout", 10, dropout_why_not, dropout_mask},
    {"Dropout", 12, nullptr, dropout_ratio},
    {"Hardmax", 13, nullptr, softmax_one_axis},
    {"LogSoftmax", 13, nullptr, softmax_one_axis},
    {"Pad", 11, pad_why_not, pad_to_inputs},
    {"ReduceSum", 13, nullptr, axes_to_input},
    {"Resize", 11, resize_why_not, resize_10_to_11},
    {"Scan", 9, refuse_scan_8, nullptr},
    {"Scatter", 11, nullptr, scatter_to_elements},
    {"Slice", 10, slice_why_not, slice_to_inputs},
    {"Softmax", 13, nullptr, softmax_one_axis},
    {"Split", 13, nullptr, split_to_input},
    {"Squeeze", 13, nullptr, axes_to_input},
    {"TopK", 10, topk_why_not, topk_to_input},
    {"Unsqueeze", 13, unsqueeze_why_not, axes_to_input},
    {"Upsample", 10, upsample_why_not, upsample_to_resize},
};

std::vector<const OpChange*> changes_for(const std::string& op, int64_t from, int64_t to) {
  std::vector<const OpChange*> out;
  for (const OpChange& c : kChanges)
    if (op == c.op && from < c.at && c.at <= to) out.push_back(&c);
  return out;
}

bool known(const std::string& op) {
  return kUnchanged.count(op) || std::any_of(std::begin(kChanges), std::end(kChanges), [&](auto& c) { return op == c.op; });
}

bool default_domain(const ir::Node& n) { return n.domain.empty() || n.domain == "ai.onnx"; }

std::string upgrade_problem(const ir::Graph& g, const ir::Node& n, int64_t from, int64_t to, bool in_body);

// If/Loop/Scan bodies share the model's opset: their nodes must need no
// rewrite (rewriting inside a body is not implemented).
std::string body_problem(const ir::Graph& g, const ir::Node& n, int64_t from, int64_t to) {
  for (const auto& [name, a] : n.attributes) {
    std::vector<std::string> bodies;
    if (a.kind == ir::Attribute::Kind::Graph) bodies.push_back(a.s);
    if (a.kind == ir::Attribute::Kind::Graphs) bodies = a.strings;
    for (const std::string& bytes : bodies) {
      auto sub = onnx_io::import_subgraph(bytes, g.opset_imports);
      if (!sub) return "its " + name + " body cannot be read: " + sub.status().message();
      for (const auto& inner : sub->graph->nodes())
        if (std::string why = upgrade_problem(*sub->graph, *inner, from, to, true); !why.empty())
          return "its " + name + " body's " + inner->describe() + ": " + why;
    }
  }
  return "";
}

// The kinds of the attributes the rewrites read (the spec's, for every op
// rewritten): a model that gives another kind is refused, not misread.
std::string attribute_kind_problem(const ir::Node& n) {
  using K = ir::Attribute::Kind;
  static const std::map<std::string, K> kinds = {
      {"starts", K::Ints}, {"ends", K::Ints},   {"axes", K::Ints},   {"split", K::Ints},  {"pads", K::Ints},
      {"scales", K::Floats}, {"min", K::Float}, {"max", K::Float},   {"ratio", K::Float}, {"value", K::Float},
      {"k", K::Int},        {"axis", K::Int},   {"spatial", K::Int}, {"mode", K::String}};
  for (const auto& [name, a] : n.attributes) {
    auto it = kinds.find(name);
    if (it != kinds.end() && a.kind != it->second) return "attribute '" + name + "' has the wrong type";
  }
  return "";
}

std::string upgrade_problem(const ir::Graph& g, const ir::Node& n, int64_t from, int64_t to, bool in_body) {
  if (!default_domain(n)) return "";  // other domains keep their own versions
  if (!known(n.op_type)) return "no upgrade of " + n.op_type + " is implemented";
  const auto changes = changes_for(n.op_type, from, to);
  if (!changes.empty())
    if (std::string why = attribute_kind_problem(n); !why.empty()) return why;
  for (const OpChange* c : changes) {
    if (c->why_not)
      if (std::string why = c->why_not(g, n, from, to); !why.empty()) return why;
    if (in_body) return n.op_type + "-" + std::to_string(c->at) + " needs a rewrite, not implemented inside a subgraph";
  }
  return body_problem(g, n, from, to);
}

// The IR version each opset was released with (ONNX 1.5: IR 5 / opset 10,
// 1.6: 6 / 11, 1.7: 7 / 12, 1.8: 7 / 13).
int64_t ir_version_of(int64_t opset) { return opset <= 9 ? 4 : opset == 10 ? 5 : opset == 11 ? 6 : 7; }

}  // namespace

Status check_opset_upgrade(const ir::Graph& g, int64_t to) {
  const int64_t from = g.opset();
  if (from >= to) return Status::ok();
  const std::string span = "opset upgrade " + std::to_string(from) + " -> " + std::to_string(to);
  if (to > kUpgradeToMax) return Status::internal(span + ": upgrades reach opset " + std::to_string(kUpgradeToMax) + " at most");
  if (from < kUpgradeFromMin)
    return Status::bad_input(span + ": upgrades start at opset " + std::to_string(kUpgradeFromMin) + ", the model has " +
                             std::to_string(from));
  for (const auto& n : g.nodes())
    if (std::string why = upgrade_problem(g, *n, from, to, false); !why.empty())
      return Status::bad_input(span + ": " + n->describe() + ": " + why);
  return Status::ok();
}

Expected<OpsetUpgrade> upgrade_opset(ir::Graph& g, int64_t to, const RankHint& rank_hint) {
  OpsetUpgrade out;
  out.from = g.opset();
  out.to = std::max(out.from, to);
  if (out.from >= to) return out;
  QT_RETURN_IF_ERROR(check_opset_upgrade(g, to));
  Edit edit{g, out.from, to, out, rank_hint};
  std::vector<ir::Node*> nodes;
  for (const auto& n : g.nodes())
    if (default_domain(*n)) nodes.push_back(n.get());
  for (ir::Node* n : nodes)
    for (const OpChange* c : changes_for(n->op_type, out.from, to))
      if (c->rewrite) c->rewrite(edit, *n);
  g.opset_imports[g.opset_imports.count("ai.onnx") ? "ai.onnx" : ""] = to;
  g.ir_version = std::max(g.ir_version, ir_version_of(to));
  g.remove_unused_values();
  QT_RETURN_IF_ERROR(g.sort_topologically());
  QT_RETURN_IF_ERROR(ir::verify(g));
  return out;
}

}  // namespace quant::passes
