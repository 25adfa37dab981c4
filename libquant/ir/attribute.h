#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "libquant/core/tensor.h"

namespace quant::ir {

// A node attribute (ONNX AttributeProto). Subgraphs (If/Loop bodies) and
// types (Optional's `type`) are held as the serialized GraphProto / TypeProto
// bytes so that they round-trip untouched.
struct Attribute {
  enum class Kind { Float, Int, String, Tensor, Graph, Floats, Ints, Strings, Graphs, Type };
  Kind kind = Kind::Int;
  float f = 0;
  int64_t i = 0;
  std::string s;  // String, or serialized GraphProto for Graph, TypeProto for Type
  std::shared_ptr<const quant::Tensor> t;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;  // Strings, or serialized GraphProtos for Graphs

  static Attribute of_int(int64_t v) { Attribute a; a.kind = Kind::Int; a.i = v; return a; }
  static Attribute of_float(float v) { Attribute a; a.kind = Kind::Float; a.f = v; return a; }
  static Attribute of_string(std::string v) { Attribute a; a.kind = Kind::String; a.s = std::move(v); return a; }
  static Attribute of_ints(std::vector<int64_t> v) { Attribute a; a.kind = Kind::Ints; a.ints = std::move(v); return a; }
  static Attribute of_floats(std::vector<float> v) { Attribute a; a.kind = Kind::Floats; a.floats = std::move(v); return a; }
  static Attribute of_tensor(quant::Tensor v) {
    Attribute a; a.kind = Kind::Tensor; a.t = std::make_shared<const quant::Tensor>(std::move(v)); return a;
  }
};

}  // namespace quant::ir
