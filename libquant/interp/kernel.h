// The interface every interpreter kernel implements. A kernel is created once
// per node at prepare time (attributes parsed and validated there) and then
// run once per sample.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "libquant/core/status.h"
#include "libquant/core/tensor.h"
#include "libquant/ir/graph.h"

namespace quant::interp {

class Kernel {
 public:
  virtual ~Kernel() = default;
  // `inputs[i]` is nullptr for an omitted optional input. The kernel sizes and
  // fills `outputs` (one per node output). Shape errors name the node.
  virtual Status run(std::span<const Tensor* const> inputs, std::vector<Tensor>& outputs) const = 0;
};

// Everything a kernel factory may read: the node and the model's opset for its domain.
struct KernelContext {
  const ir::Node& node;
  int64_t opset;
};

using KernelFactory = Expected<std::unique_ptr<Kernel>> (*)(const KernelContext&);

// The factory for (domain, op_type) at `opset`, or nullptr when qtool has none.
KernelFactory find_kernel_factory(const std::string& domain, const std::string& op_type);

// Helpers for kernel implementations.
Status require_inputs(const ir::Node& node, std::span<const Tensor* const> inputs, size_t min_count);
Status require_dtype(const ir::Node& node, const Tensor& t, DType want, const char* what);

}  // namespace quant::interp
