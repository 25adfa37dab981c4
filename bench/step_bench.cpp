// Where a model's second thread goes, step by step (scripts/bench.sh steps):
// the fused plan qrun runs, timed per step on 1 and on 2 threads. Not a test:
// it times things, and the figures depend on the host and its load.
//
//   step_bench MODEL.onnx SAMPLE.npy [RUNS]      RUNS: 2 to 100000, default 30
//
// The model takes one input, the sample (a model of more inputs fails its
// first run with one error line).
//
// After two warm-up rounds, RUNS rounds: on 1 thread and then on 2, a run
// with an observer (the time from one step's outputs to the next step's) and
// one without it (the whole run). The 2 threads' runs follow an untimed one,
// which wakes the thread pool's worker, asleep since the last 2-thread run
// (otherwise the first step would carry its wake-up). Per step the median
// over the rounds on each thread count, the 2-thread speed-up and the
// 2-thread loss, t2 - t1 / 2 (what the second thread failed to halve); then
// the sums of the step medians, the whole-run medians and, between them, the
// time spent outside the steps' medians (scheduling, variance). A row is an
// observed value: the graph's input, then each step's outputs in run order
// (a step with several outputs has a row for each, the later ones about
// 0). QTOOL_ISA caps the kernels as for qrun. Bad arguments or a model that
// does not load or run: one "error:" line, exit 2.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/median.h"
#include "libquant/io/npy.h"
#include "libquant/kernels/cpu.h"
#include "libquant/onnx/model_io.h"
#include "libquant/tune/run_setup.h"

namespace {

using Clock = std::chrono::steady_clock;
using qtool_bench::median;

double micros(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::micro>(b - a).count(); }

int fail(const std::string& message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 2;
}

// One thread count's session, its per-step times and whole-run times.
struct Side {
  quant::tune::Prepared prepared;
  std::vector<std::string> names;         // per observed value, from the first observed run
  std::vector<std::vector<double>> step;  // per observed value, one time per round
  std::vector<double> whole;
};

// One run of `side`; with `observe`, each step's time appended. Returns the
// run's error, if any.
std::string run_once(Side& side, const std::vector<quant::Tensor>& inputs, bool observe) {
  std::vector<double> times;
  std::vector<std::string> names;
  Clock::time_point last = Clock::now();
  const Clock::time_point start = last;
  const auto observer = [&](const quant::ir::Value& v, const quant::Tensor&) {
    const Clock::time_point now = Clock::now();
    times.push_back(micros(last, now));
    if (side.names.empty()) names.push_back(v.name());
    last = Clock::now();
  };
  auto out = observe ? side.prepared.session->run(inputs, observer) : side.prepared.session->run(inputs);
  if (!out) return out.status().message();
  if (!observe) {
    side.whole.push_back(micros(start, Clock::now()));
    return "";
  }
  if (side.names.empty()) {
    side.names = std::move(names);
    side.step.assign(side.names.size(), {});
  }
  if (times.size() != side.step.size()) return "the plan ran a different number of steps";
  for (size_t i = 0; i < times.size(); ++i) side.step[i].push_back(times[i]);
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) return fail("usage: step_bench MODEL.onnx SAMPLE.npy [RUNS]");
  char* end = nullptr;
  const long runs = argc == 4 ? std::strtol(argv[3], &end, 10) : 30;
  if (argc == 4 && (*end != '\0' || runs < 2 || runs > 100000))
    return fail(std::string("RUNS must be a whole number from 2 to 100000, not '") + argv[3] + "'");
  if (const std::string env = quant::kernels::kernel_env_error(); !env.empty()) return fail(env);
  auto sample = quant::io::read_npy(argv[2]);
  if (!sample) return fail(std::string(argv[2]) + ": " + sample.status().message());
  const std::vector<quant::Tensor> inputs{std::move(sample).value()};
  Side sides[2];
  for (int t = 0; t < 2; ++t) {
    auto graph = quant::onnx_io::load_model(argv[1]);
    if (!graph) return fail(std::string(argv[1]) + ": " + graph.status().message());
    quant::tune::RunSetup setup = quant::tune::run_setup(nullptr, std::nullopt, t + 1);
    setup.plan.fuse = true;  // as qrun runs a model
    auto prepared = quant::tune::prepare(std::move(graph).value(), setup);
    if (!prepared) return fail(std::string(argv[1]) + ": " + prepared.status().message());
    sides[t].prepared = std::move(prepared).value();
  }
  for (int round = -2; round < runs; ++round)
    for (int t = 0; t < 2; ++t) {
      if (t == 1) {
        if (const std::string e = run_once(sides[t], inputs, false); !e.empty()) return fail(std::string(argv[1]) + ": " + e);
        sides[t].whole.pop_back();  // the wake-up run
      }
      for (bool observe : {true, false})
        if (const std::string e = run_once(sides[t], inputs, observe); !e.empty())
          return fail(std::string(argv[1]) + ": " + e);
    }
  // The warm-up rounds' times go.
  for (Side& side : sides) {
    for (auto& s : side.step) s.erase(s.begin(), s.begin() + 2);
    side.whole.erase(side.whole.begin(), side.whole.begin() + 2);
  }
  if (sides[0].names != sides[1].names) return fail(std::string(argv[1]) + ": 1 and 2 threads ran different steps");
  std::printf("steps of %s, %s; medians of %ld rounds, us\n", argv[1], quant::kernels::kernel_setup().c_str(), runs);
  std::printf("%-48s %9s %9s %7s %7s\n", "value (input, then the steps' outputs)", "1 thread", "2 threads", "speedup", "loss");
  double sum[2] = {0, 0};
  for (size_t i = 0; i < sides[0].names.size(); ++i) {
    const double t1 = median(sides[0].step[i]), t2 = median(sides[1].step[i]);
    sum[0] += t1, sum[1] += t2;
    std::string name = sides[0].names[i];
    if (name.size() > 48) name = ".." + name.substr(name.size() - 46);
    std::printf("%-48s %9.1f %9.1f %7.2f %7.1f\n", name.c_str(), t1, t2, t2 > 0 ? t1 / t2 : 0.0, t2 - t1 / 2);
  }
  const double w1 = median(sides[0].whole), w2 = median(sides[1].whole);
  std::printf("%-48s %9.1f %9.1f %7.2f %7.1f\n", "sum of the steps", sum[0], sum[1], sum[0] / sum[1], sum[1] - sum[0] / 2);
  std::printf("%-48s %9.1f %9.1f %7.2f %7.1f\n", "whole run (no observer)", w1, w2, w1 / w2, w2 - w1 / 2);
  std::printf("%-48s %9.1f %9.1f\n", "outside the steps (whole - sum)", w1 - sum[0], w2 - sum[1]);
  return 0;
}
