// Splitting a sample list for --shard I/N and stacking samples into --batch N
// tensors (DESIGN "Inputs").
#pragma once

#include <string>
#include <vector>

#include "libquant/core/status.h"
#include "libquant/core/tensor.h"
#include "libquant/io/dataset.h"

namespace quant::io {

struct Shard {
  size_t index = 0;  // 0-based: shards 0/N .. (N-1)/N
  size_t count = 1;
};

// "I/N" with 0 <= I < N; anything else is bad_input naming the flag.
Expected<Shard> parse_shard(const std::string& text);

// The I-th of N interleaved parts: samples I, I+N, I+2N, ... Interleaving (not
// contiguous blocks) keeps the shards the same size within one sample and lets
// a shard be computed without knowing the other shards' sizes.
std::vector<SampleSource> select_shard(const std::vector<SampleSource>& samples, Shard shard);

// Concatenates the samples' tensors along dim 0, input by input: every sample must
// give each input with the same dtype, the same rank >= 1 and the same dims after
// the first. Errors name the sample (`stems[i]`) and the input (`input_names`).
Expected<std::vector<Tensor>> stack_samples(const std::vector<std::vector<Tensor>>& samples,
                                            const std::vector<std::string>& stems,
                                            const std::vector<std::string>& input_names);

}  // namespace quant::io
