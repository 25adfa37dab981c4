#include "libquant/io/batch.h"

#include <charconv>
#include <cstring>

namespace quant::io {

Expected<Shard> parse_shard(const std::string& text) {
  size_t slash = text.find('/');
  Shard s;
  bool ok = slash != std::string::npos;
  if (ok) {
    auto r1 = std::from_chars(text.data(), text.data() + slash, s.index);
    auto r2 = std::from_chars(text.data() + slash + 1, text.data() + text.size(), s.count);
    ok = slash > 0 && r1.ec == std::errc() && r1.ptr == text.data() + slash && r2.ec == std::errc() &&
         r2.ptr == text.data() + text.size() && s.count >= 1 && s.index < s.count;
  }
  if (!ok) return Status::bad_input("--shard '" + text + "': expected I/N with 0 <= I < N, e.g. 0/4 (shards 0/4 .. 3/4)");
  return s;
}

std::vector<SampleSource> select_shard(const std::vector<SampleSource>& samples, Shard shard) {
  std::vector<SampleSource> out;
  for (size_t i = shard.index; i < samples.size(); i += shard.count) out.push_back(samples[i]);
  return out;
}

Expected<std::vector<Tensor>> stack_samples(const std::vector<std::vector<Tensor>>& samples,
                                            const std::vector<std::string>& stems,
                                            const std::vector<std::string>& input_names) {
  assert(!samples.empty() && stems.size() == samples.size());
  if (samples.size() == 1) return samples.front();
  std::vector<Tensor> out;
  for (size_t k = 0; k < input_names.size(); ++k) {
    const Tensor& first = samples.front()[k];
    int64_t rows = 0;
    for (size_t s = 0; s < samples.size(); ++s) {
      const Tensor& t = samples[s][k];
      bool same = t.dtype() == first.dtype() && t.rank() == first.rank() && t.rank() >= 1 &&
                  std::equal(t.shape().begin() + 1, t.shape().end(), first.shape().begin() + 1);
      if (!same) {
        return Status::bad_input("sample '" + stems[s] + "': input '" + input_names[k] + "' is " +
                                 std::string(dtype_name(t.dtype())) + " " + dims_to_string(t.shape()) +
                                 ", which cannot be stacked along dim 0 with sample '" + stems[0] + "' (" +
                                 std::string(dtype_name(first.dtype())) + " " + dims_to_string(first.shape()) + ")");
      }
      rows += t.dim(0);
    }
    Dims shape = first.shape();
    shape[0] = rows;
    auto checked = Tensor::create(first.dtype(), shape);
    if (!checked)
      return checked.status().with_context("--batch " + std::to_string(samples.size()) + ": input '" + input_names[k] + "'");
    Tensor stacked = std::move(checked).value();
    auto* dst = static_cast<std::byte*>(stacked.raw());
    for (const auto& sample : samples) {
      std::memcpy(dst, sample[k].raw(), sample[k].byte_size());
      dst += sample[k].byte_size();
    }
    out.push_back(std::move(stacked));
  }
  return out;
}

}  // namespace quant::io
