// Small graph edits the rewriting passes (QDQ insertion, dynamic quantization,
// lowering) share.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "libquant/core/tensor.h"
#include "libquant/ir/graph.h"

namespace quant::passes {

// A new constant value named after `base` (made unique) holding `t`.
inline ir::Value* add_constant(ir::Graph& g, const std::string& base, Tensor t) {
  ir::Value* v = g.add_value(g.unique_name(base));
  v->dtype = t.dtype();
  v->has_shape = true;
  v->shape = t.shape();
  v->dim_names.assign(v->shape.size(), "");
  v->constant = std::make_unique<Tensor>(std::move(t));
  return v;
}

}  // namespace quant::passes
