// What the three mains share: exit codes, the one-line `error:` report, flag
// parsing that maps CLI11's errors onto exit code 2.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>

#include "libquant/core/status.h"

namespace qtool {

// Exit codes of DESIGN "Command-line contract".
constexpr int kExitOk = 0;
constexpr int kExitInternal = 1;
constexpr int kExitBadInput = 2;
constexpr int kExitGateFailed = 3;

int exit_code(const quant::Status& status);

// Prints `error: <message>` on stderr and returns the status' exit code.
int report(const quant::Status& status);

// Names the tool (usage lines and `see NAME --help` read the same however it
// was started), makes --version print "NAME VERSION" and ends --help with an
// "Examples:" paragraph, which help2man turns into the man page's EXAMPLES
// section (docs/man/NAME.h2m adds the hand-written ones).
void describe_tool(CLI::App& app, const std::string& name, const std::string& examples);

// Parses argv into `app`; on --help/--version prints and returns 0 through
// `exit_now`, on a flag error prints one `error:` line and returns 2.
// Returns true when the caller should go on.
bool parse_flags(CLI::App& app, int argc, char** argv, int& exit_now);

// Runs `body`, turning escaped exceptions (bad_alloc, ...) into exit code 1
// with an `error:` line instead of a crash.
int guarded_main(const std::function<int()>& body);

// Default of --threads (issue 9): the number of cores this process may run
// on (its CPU affinity mask, e.g. under taskset or a container's cpuset),
// else std::thread::hardware_concurrency(), at least 1.
int default_threads();

// Sets up logging: warnings and errors only unless --verbose.
void init_logging(bool verbose);

}  // namespace qtool
