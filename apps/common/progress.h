#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace qtool {

// A one-line progress bar with samples/s and ETA on stderr; silent when
// stderr is not a terminal or when quiet.
class Progress {
 public:
  Progress(std::string label, size_t total, bool quiet);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  void tick();

 private:
  void draw(bool final);
  std::string label_;
  size_t total_;
  size_t done_ = 0;
  bool enabled_;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace qtool
