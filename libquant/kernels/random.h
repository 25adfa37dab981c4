// The uniform generator of the ONNX generator ops (Dropout's training mask,
// Bernoulli, RandomUniform, RandomUniformLike). Standard library only.
#pragma once

#include <cstdint>
#include <random>

namespace quant::kernels {

// Uniform [0, 1) doubles equal to numpy's legacy np.random.seed(s);
// np.random.uniform(0, 1, n) (MT19937 seeded with init_genrand, 53-bit
// samples from two 32-bit draws), so that a seeded op reproduces what the
// ONNX reference implementation draws from the same seed.
class NumpyUniform {
 public:
  explicit NumpyUniform(uint32_t seed) : mt_(seed) {}
  double next() {
    const uint64_t a = mt_() >> 5, b = mt_() >> 6;
    return (static_cast<double>(a) * 67108864.0 + static_cast<double>(b)) / 9007199254740992.0;
  }

 private:
  std::mt19937 mt_;
};

}  // namespace quant::kernels
