#include "apps/common/cli.h"
#include "libquant/kernels/cpu.h"

#if defined(__linux__)
#include <sched.h>
#endif

#include <algorithm>
#include <thread>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <exception>
#include <new>

namespace qtool {

int default_threads() {
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
#endif
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

int exit_code(const quant::Status& status) {
  switch (status.code()) {
    case quant::StatusCode::kOk: return kExitOk;
    case quant::StatusCode::kInternal: return kExitInternal;
    case quant::StatusCode::kBadInput: return kExitBadInput;
    case quant::StatusCode::kGateFailed: return kExitGateFailed;
  }
  return kExitInternal;
}

int report(const quant::Status& status) {
  if (status.is_ok()) return kExitOk;
  std::string msg = status.message();
  // One line, whatever the message holds.
  for (char& c : msg)
    if (c == '\n') c = ' ';
  std::fprintf(stderr, "error: %s\n", msg.c_str());
  return exit_code(status);
}

void describe_tool(CLI::App& app, const std::string& name, const std::string& examples) {
  app.name(name);
  app.set_version_flag("--version", name + " " + QTOOL_VERSION);
  app.footer("Examples:\n" + examples);
}

bool parse_flags(CLI::App& app, int argc, char** argv, int& exit_now) {
  try {
    app.parse(argc, argv);
    // QTOOL_ISA caps the kernels' ISA, QTOOL_L2_KB sets the cache size their
    // blocking assumes (libquant/kernels/cpu.h): a typo must not silently run
    // another path than the one asked for.
    if (std::string bad = quant::kernels::kernel_env_error(); !bad.empty()) {
      std::fprintf(stderr, "error: %s\n", bad.c_str());
      exit_now = kExitBadInput;
      return false;
    }
    return true;
  } catch (const CLI::CallForHelp& e) {
    exit_now = app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    exit_now = app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    exit_now = app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string msg = e.what();
    for (char& c : msg)
      if (c == '\n') c = ' ';
    std::fprintf(stderr, "error: %s (see %s --help)\n", msg.c_str(), app.get_name().c_str());
    exit_now = kExitBadInput;
  }
  return false;
}

int guarded_main(const std::function<int()>& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "error: out of memory\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: internal failure: %s\n", e.what());
  }
  return kExitInternal;
}

void init_logging(bool verbose) {
  // Logs are diagnostics: stderr, never mixed into results on stdout.
  spdlog::set_default_logger(spdlog::stderr_color_mt("qtool"));
  spdlog::set_level(verbose ? spdlog::level::debug : spdlog::level::warn);
  spdlog::set_pattern("%l: %v");
}

}  // namespace qtool
