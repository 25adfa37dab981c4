#include "apps/common/progress.h"

#include <unistd.h>

#include <cstdio>

namespace qtool {

Progress::Progress(std::string label, size_t total, bool quiet)
    : label_(std::move(label)), total_(total), enabled_(!quiet && isatty(STDERR_FILENO) == 1) {
  start_ = last_draw_ = std::chrono::steady_clock::now();
}

Progress::~Progress() {
  if (enabled_ && done_ > 0) {
    draw(true);
    std::fputc('\n', stderr);
  }
}

void Progress::tick() {
  ++done_;
  if (!enabled_) return;
  auto now = std::chrono::steady_clock::now();
  // Redraw at most ten times a second.
  if (now - last_draw_ < std::chrono::milliseconds(100) && done_ < total_) return;
  last_draw_ = now;
  draw(false);
}

void Progress::draw(bool final) {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double rate = elapsed > 0 ? static_cast<double>(done_) / elapsed : 0;
  const double eta = rate > 0 ? static_cast<double>(total_ - std::min(done_, total_)) / rate : 0;
  constexpr int kWidth = 30;
  const int filled = total_ ? static_cast<int>(kWidth * static_cast<double>(done_) / static_cast<double>(total_)) : kWidth;
  std::string bar(static_cast<size_t>(std::min(filled, kWidth)), '#');
  bar.resize(kWidth, '.');
  std::fprintf(stderr, "\r%s [%s] %zu/%zu  %.1f samples/s  %s %.0fs ", label_.c_str(), bar.c_str(), done_, total_, rate,
               final ? "took" : "ETA", final ? elapsed : eta);
  std::fflush(stderr);
}

}  // namespace qtool
