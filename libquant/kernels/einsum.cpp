#include "libquant/kernels/einsum.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <type_traits>

namespace quant::kernels {
namespace {

// Labels: a letter is its character code; broadcast dimension e of "..." is
// kEllipsisBase + e (counted from the left of the widest "...").
constexpr int kEllipsisBase = 256;
constexpr int kEllipsisToken = -1;

// A term ("ij", "...ii") as tokens: letters, and kEllipsisToken for "...".
bool parse_term(const std::string& term, std::vector<int>& tokens, std::string* error) {
  bool seen_ellipsis = false;
  for (size_t i = 0; i < term.size(); ++i) {
    const char c = term[i];
    if (std::isalpha(static_cast<unsigned char>(c))) {
      tokens.push_back(static_cast<unsigned char>(c));
    } else if (c == '.' && term.compare(i, 3, "...") == 0 && !seen_ellipsis) {
      tokens.push_back(kEllipsisToken);
      seen_ellipsis = true;
      i += 2;
    } else {
      *error = "Einsum term '" + term + "' has an unexpected character at position " + std::to_string(i);
      return false;
    }
  }
  return true;
}

}  // namespace

std::optional<EinsumPlan> plan_einsum(const std::string& equation, const std::vector<std::vector<int64_t>>& shapes,
                                      std::string* error) {
  std::string eq;
  for (char c : equation)
    if (!std::isspace(static_cast<unsigned char>(c))) eq += c;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != shapes.size()) {
    *error = "Einsum equation '" + equation + "' has " + std::to_string(terms.size()) + " terms for " +
             std::to_string(shapes.size()) + " inputs";
    return std::nullopt;
  }
  std::vector<std::vector<int>> tokens(terms.size());
  size_t ellipsis_rank = 0;
  bool any_ellipsis = false;
  for (size_t i = 0; i < terms.size(); ++i) {
    if (!parse_term(terms[i], tokens[i], error)) return std::nullopt;
    const size_t letters = static_cast<size_t>(std::count_if(tokens[i].begin(), tokens[i].end(), [](int t) { return t >= 0; }));
    const bool has_ellipsis = letters != tokens[i].size();
    any_ellipsis |= has_ellipsis;
    if (shapes[i].size() < letters || (!has_ellipsis && shapes[i].size() != letters)) {
      *error = "Einsum term '" + terms[i] + "' does not fit input " + std::to_string(i) + " of rank " +
               std::to_string(shapes[i].size());
      return std::nullopt;
    }
    if (has_ellipsis) ellipsis_rank = std::max(ellipsis_rank, shapes[i].size() - letters);
  }

  // Label sizes, and per operand the (label, dim) pairs.
  std::map<int, int64_t> size_of;
  std::map<int, int> letter_count;
  std::vector<int> first_seen;
  std::vector<std::vector<std::pair<int, size_t>>> dims_of(terms.size());
  for (size_t i = 0; i < terms.size(); ++i) {
    const size_t letters = static_cast<size_t>(std::count_if(tokens[i].begin(), tokens[i].end(), [](int t) { return t >= 0; }));
    const size_t own_ellipsis = shapes[i].size() - letters;
    size_t dim = 0;
    for (int t : tokens[i]) {
      std::vector<int> labels;
      if (t == kEllipsisToken) {
        for (size_t e = 0; e < own_ellipsis; ++e) labels.push_back(kEllipsisBase + static_cast<int>(ellipsis_rank - own_ellipsis + e));
      } else {
        labels.push_back(t);
        ++letter_count[t];
      }
      for (int label : labels) {
        const int64_t n = shapes[i][dim];
        auto it = size_of.find(label);
        if (it == size_of.end()) {
          size_of[label] = n;
          first_seen.push_back(label);
        } else if (it->second != n) {
          // "..." dimensions broadcast (1 against n); letters must agree.
          if (label >= kEllipsisBase && (it->second == 1 || n == 1)) {
            it->second = std::max(it->second, n);
          } else {
            *error = "Einsum label '" + (label >= kEllipsisBase ? std::string("...") : std::string(1, static_cast<char>(label))) +
                     "' has sizes " + std::to_string(it->second) + " and " + std::to_string(n);
            return std::nullopt;
          }
        }
        dims_of[i].push_back({label, dim});
        ++dim;
      }
    }
  }

  std::vector<int> out_labels;
  if (arrow != std::string::npos) {
    std::vector<int> out_tokens;
    if (!parse_term(eq.substr(arrow + 2), out_tokens, error)) return std::nullopt;
    for (int t : out_tokens) {
      if (t == kEllipsisToken) {
        for (size_t e = 0; e < ellipsis_rank; ++e) out_labels.push_back(kEllipsisBase + static_cast<int>(e));
        continue;
      }
      if (!letter_count.count(t) || std::find(out_labels.begin(), out_labels.end(), t) != out_labels.end()) {
        *error = "Einsum output label '" + std::string(1, static_cast<char>(t)) + "' is repeated or absent from the inputs";
        return std::nullopt;
      }
      out_labels.push_back(t);
    }
  } else {
    if (any_ellipsis)
      for (size_t e = 0; e < ellipsis_rank; ++e) out_labels.push_back(kEllipsisBase + static_cast<int>(e));
    for (const auto& [label, count] : letter_count)  // std::map: ASCII order
      if (count == 1) out_labels.push_back(label);
  }

  EinsumPlan plan;
  std::vector<int> loop = out_labels;
  for (int label : first_seen)
    if (std::find(loop.begin(), loop.end(), label) == loop.end()) loop.push_back(label);
  plan.output_labels = out_labels.size();
  for (int label : loop) plan.sizes.push_back(size_of[label]);
  plan.output_shape.assign(plan.sizes.begin(), plan.sizes.begin() + static_cast<long>(out_labels.size()));
  for (size_t i = 0; i < terms.size(); ++i) {
    std::vector<int64_t> dim_stride(shapes[i].size());
    int64_t s = 1;
    for (size_t d = shapes[i].size(); d-- > 0;) {
      dim_stride[d] = s;
      s *= shapes[i][d];
    }
    std::vector<int64_t> strides(loop.size(), 0);
    for (const auto& [label, dim] : dims_of[i]) {
      const size_t l = static_cast<size_t>(std::find(loop.begin(), loop.end(), label) - loop.begin());
      // A size-1 dim broadcast against a larger label size stays at stride 0;
      // a label repeated in one term adds its strides (the diagonal).
      if (shapes[i][dim] == plan.sizes[l]) strides[l] += dim_stride[dim];
    }
    plan.strides.push_back(std::move(strides));
  }
  return plan;
}

template <class T>
void einsum(const EinsumPlan& plan, std::span<const T* const> operands, T* y) {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double,
                                 std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;
  const size_t L = plan.sizes.size();
  int64_t out_count = 1, summed = 1;
  for (size_t l = 0; l < L; ++l) (l < plan.output_labels ? out_count : summed) *= plan.sizes[l];
  if (summed == 0) {
    std::fill(y, y + out_count, T(0));
    return;
  }
  const int64_t total = out_count * summed;
  std::vector<int64_t> counter(L, 0), offset(operands.size(), 0);
  Acc acc = 0;
  for (int64_t t = 0; t < total; ++t) {
    Acc prod = 1;
    for (size_t k = 0; k < operands.size(); ++k) prod *= static_cast<Acc>(operands[k][offset[k]]);
    acc += prod;
    if ((t + 1) % summed == 0) {
      y[t / summed] = static_cast<T>(acc);
      acc = 0;
    }
    for (size_t l = L; l-- > 0;) {
      for (size_t k = 0; k < operands.size(); ++k) offset[k] += plan.strides[k][l];
      if (++counter[l] < plan.sizes[l]) break;
      for (size_t k = 0; k < operands.size(); ++k) offset[k] -= plan.strides[k][l] * plan.sizes[l];
      counter[l] = 0;
    }
  }
}

template void einsum<float>(const EinsumPlan&, std::span<const float* const>, float*);
template void einsum<double>(const EinsumPlan&, std::span<const double* const>, double*);
template void einsum<int32_t>(const EinsumPlan&, std::span<const int32_t* const>, int32_t*);
template void einsum<uint32_t>(const EinsumPlan&, std::span<const uint32_t* const>, uint32_t*);
template void einsum<int64_t>(const EinsumPlan&, std::span<const int64_t* const>, int64_t*);
template void einsum<uint64_t>(const EinsumPlan&, std::span<const uint64_t* const>, uint64_t*);

}  // namespace quant::kernels
