// Opset upgrade: rewrites a graph of an older ai.onnx opset (7 and up) into
// an equivalent graph of a newer one (up to 13), op by op, following the
// changes listed in the ONNX spec's Changelog (docs/Changelog.md). qconvert
// runs it when the output it is asked for needs a newer opset than the model
// has (QDQ: 10, per-channel DequantizeLinear: 13, dynamic: 11).
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "libquant/core/status.h"
#include "libquant/ir/graph.h"

namespace quant::passes {

// The oldest and newest ai.onnx opsets the upgrade handles.
inline constexpr int64_t kUpgradeFromMin = 7;
inline constexpr int64_t kUpgradeToMax = 13;

// The ai.onnx opset a pass's output needs: below `required` it cannot be
// written; below `wanted` it is written less well (`fallback` says how).
struct OpsetNeed {
  int64_t required = 0;
  int64_t wanted = 0;
  std::string why;       // "QuantizeLinear/DequantizeLinear"
  std::string fallback;  // what happens between required and wanted
};

struct OpsetUpgrade {
  int64_t from = 0, to = 0;
  // One line per rewritten node ("Slice 'crop': starts/ends/axes became inputs (Slice-10)").
  std::vector<std::string> notes;
  // Values the upgrade created that hold exactly the elements of an existing
  // value (a Flatten/Reshape around a Softmax): {new name, existing name}.
  // A profile made from the original model covers them through these.
  std::vector<std::pair<std::string, std::string>> same_values;
};

// Checks that every node of `graph` (and of its If/Loop/Scan bodies) can be
// upgraded from the graph's opset to `to`; the graph is not changed. The
// error names the op, the node and both opsets.
Status check_opset_upgrade(const ir::Graph& graph, int64_t to);

// The rank of a value the graph does not declare (qconvert: as the profile
// observed it), or -1 when unknown. With it a pre-13 Softmax over the last
// axis of such a value keeps its one node.
using RankHint = std::function<int64_t(const ir::Value&)>;

// Checks, then rewrites every node and sets the graph's ai.onnx opset to
// `to` (and its IR version to at least the one that opset came with). A
// graph already at `to` or newer is left as it is. On error the graph is
// unchanged.
Expected<OpsetUpgrade> upgrade_opset(ir::Graph& graph, int64_t to, const RankHint& rank_hint = nullptr);

}  // namespace quant::passes
