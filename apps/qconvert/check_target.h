// qconvert --check-target T MODEL.onnx: lists every rule of target T that an
// already quantized model breaks (libquant/target/check.h).
#pragma once

#include <string>

#include "libquant/core/status.h"

namespace qtool {

// Prints one line per violation and a summary (or, with `json`, one JSON
// document) on stdout. OK when there is none; gate_failed (exit 3) when
// there is at least one; bad_input for an unreadable model or target.
quant::Status check_target(const std::string& target, const std::string& model, bool json);

}  // namespace qtool
