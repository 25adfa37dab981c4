// ONNX backend conformance runner: runs every test directory (model.onnx +
// test_data_set_*/input_K.pb, output_K.pb) of the given roots through the
// interpreter and compares outputs (floats: |a-b| <= atol + rtol*|b|, others
// exact). Each test runs in a forked child with a time limit, so a crash or a
// hang in one op is reported as that test's failure, not the run's.
//
//   conformance ROOT... [--known-failures FILE] [--filter TEXT] [--write-failures FILE] [--verbose]
//
// A failure has a class: unsupported (an operator, element type or value kind
// the interpreter refuses), mismatch (outputs differ in value, type, shape or
// number), error (any other refusal, e.g. of the test's inputs), crash, timeout.
// The known-failures file lists "name class reason..." per line; a listed test
// must fail with its listed class, so a test known to lack an operator that
// starts crashing is reported, not excused.
//
// Exit 1 when a test fails that the known-failures file does not list, or with
// another class than listed; 2 on bad input: a root that is not a directory, a
// known-failures file that cannot be read or has a malformed line, or no test
// found at all (a run that checks nothing must not pass).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "libquant/interp/session.h"
#include "libquant/io/tensor_proto.h"
#include "libquant/onnx/model_io.h"

namespace fs = std::filesystem;
using quant::Status;
using quant::Tensor;

namespace {

constexpr double kRtol = 1e-3;
constexpr double kAtol = 1e-5;
constexpr int kTimeLimitSeconds = 60;

std::vector<fs::path> sorted_dirs(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_directory() && e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<fs::path> sorted_files(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path());
  // input_10.pb sorts after input_9.pb: order by the number.
  auto index = [&](const fs::path& p) { return std::stoi(p.stem().string().substr(prefix.size())); };
  std::sort(out.begin(), out.end(), [&](auto& a, auto& b) { return index(a) < index(b); });
  return out;
}

Status compare_tensors(const Tensor& got, const Tensor& want, const std::string& where);

// Sequences and optionals compare item by item.
Status compare(const Tensor& got, const Tensor& want, size_t k) {
  const std::string where = "output " + std::to_string(k);
  if (got.kind() != want.kind() || got.items().size() != want.items().size())
    return Status::bad_input(where + " is " + quant::describe_value(got) + ", expected " + quant::describe_value(want));
  if (got.is_tensor()) return compare_tensors(got, want, where);
  for (size_t i = 0; i < got.items().size(); ++i) {
    const Tensor& g = got.items()[i];
    const Tensor& w = want.items()[i];
    Status st = g.is_tensor() && w.is_tensor() ? compare_tensors(g, w, where + " item " + std::to_string(i)) : compare(g, w, k);
    if (!st.is_ok()) return st;
  }
  return Status::ok();
}

Status compare_tensors(const Tensor& got, const Tensor& want, const std::string& where) {
  if (got.dtype() != want.dtype())
    return Status::bad_input(where + " has type " + std::string(quant::dtype_name(got.dtype())) + ", expected " +
                             std::string(quant::dtype_name(want.dtype())));
  if (got.shape() != want.shape())
    return Status::bad_input(where + " has shape " + quant::dims_to_string(got.shape()) + ", expected " +
                             quant::dims_to_string(want.shape()));
  if (got.dtype() == quant::DType::String) {
    for (int64_t i = 0; i < got.size(); ++i)
      if (got.string_values()[static_cast<size_t>(i)] != want.string_values()[static_cast<size_t>(i)])
        return Status::bad_input(where + "[" + std::to_string(i) + "] = '" + got.string_values()[static_cast<size_t>(i)] +
                                 "', expected '" + want.string_values()[static_cast<size_t>(i)] + "'");
    return Status::ok();
  }
  const bool is_float = quant::is_float(got.dtype()) && got.dtype() != quant::DType::Float16 && got.dtype() != quant::DType::BFloat16;
  for (int64_t i = 0; i < got.size(); ++i) {
    if (is_float) {
      const double a = got.as_double(i), b = want.as_double(i);
      if (std::isnan(a) && std::isnan(b)) continue;
      if (a == b) continue;  // equal infinities
      if (!(std::abs(a - b) <= kAtol + kRtol * std::abs(b))) {
        std::ostringstream m;
        m << where << "[" << i << "] = " << a << ", expected " << b;
        return Status::bad_input(m.str());
      }
    } else if (std::memcmp(static_cast<const char*>(got.raw()) + i * quant::dtype_size(got.dtype()),
                           static_cast<const char*>(want.raw()) + i * quant::dtype_size(got.dtype()),
                           quant::dtype_size(got.dtype())) != 0) {
      return Status::bad_input(where + "[" + std::to_string(i) + "] differs");
    }
  }
  return Status::ok();
}

// ONNX <= 1.13 writes the bfloat16 tensors of its test data as UINT16
// (onnx/backend/test/case/node/cast.py stores the raw bits): relabel them when
// the model declares bfloat16, so the bits are compared as what they are.
Tensor relabel_bfloat16(Tensor t, quant::DType declared) {
  if (declared != quant::DType::BFloat16 || t.dtype() != quant::DType::UInt16) return t;
  Tensor b(quant::DType::BFloat16, t.shape());
  std::memcpy(b.raw(), t.raw(), t.byte_size());
  return b;
}

const std::set<std::string> kClasses = {"unsupported", "mismatch", "error", "crash", "timeout"};

// Why a test failed: its class (kClasses) and the message.
struct Failure {
  std::string kind;
  std::string message;
};

// Loading and preparing say "not supported"/"unsupported" when the
// interpreter lacks an operator, element type or value kind.
Failure refusal(const Status& st) {
  const std::string& m = st.message();
  const bool unsupported = m.find("not supported") != std::string::npos || m.find("unsupported") != std::string::npos;
  return {unsupported ? "unsupported" : "error", m};
}

// Runs the test_data_set_* folders of one test; nullopt when all pass.
std::optional<Failure> run_sets(const fs::path& dir, const quant::ir::Graph& graph, const quant::interp::Session& session) {
  auto sets = sorted_dirs(dir, "test_data_set_");
  if (sets.empty()) return Failure{"error", "no test_data_set_* folder"};
  for (const auto& set : sets) {
    std::vector<Tensor> inputs;
    for (const auto& f : sorted_files(set, "input_")) {
      const size_t k = inputs.size();
      auto t = quant::io::read_value_pb(f.string(), k < graph.inputs.size() ? graph.inputs[k]->kind : Tensor::Kind::Tensor);
      if (!t) return Failure{"error", t.status().message()};
      inputs.push_back(k < graph.inputs.size() ? relabel_bfloat16(std::move(t).value(), graph.inputs[k]->dtype)
                                               : std::move(t).value());
    }
    // Inputs beyond the graph's (optional inputs given as initializers) are dropped.
    if (inputs.size() > graph.inputs.size()) inputs.resize(graph.inputs.size());
    auto outs = session.run(inputs);
    if (!outs) return refusal(outs.status());
    auto expected = sorted_files(set, "output_");
    if (expected.size() != outs->size())
      return Failure{"mismatch", "produced " + std::to_string(outs->size()) + " outputs, expected " +
                                     std::to_string(expected.size())};
    for (size_t k = 0; k < expected.size(); ++k) {
      auto want = quant::io::read_value_pb(expected[k].string(),
                                           k < graph.outputs.size() ? graph.outputs[k]->kind : Tensor::Kind::Tensor);
      if (!want) return Failure{"error", want.status().message()};
      Tensor w = k < graph.outputs.size() ? relabel_bfloat16(std::move(want).value(), graph.outputs[k]->dtype)
                                          : std::move(want).value();
      Status st = compare((*outs)[k], w, k);
      if (!st.is_ok()) return Failure{"mismatch", st.message()};
    }
  }
  return std::nullopt;
}

// ONNX 1.12 wrote some models whose declared input shape disagrees with their
// own test data: test_castlike_*BFLOAT16* declare 'like' as [3,4] and feed
// [1] (CastLike reads only its type). The ONNX backend runner does not check
// declared shapes; here an input whose first data set contradicts its
// declared shape is taken as having none, so that the operator is what the
// test checks. Inputs that agree keep their check.
void drop_contradicted_shapes(const fs::path& dir, quant::ir::Graph& graph) {
  auto sets = sorted_dirs(dir, "test_data_set_");
  if (sets.empty()) return;
  const auto files = sorted_files(sets.front(), "input_");
  for (size_t k = 0; k < files.size() && k < graph.inputs.size(); ++k) {
    quant::ir::Value& v = *graph.inputs[k];
    if (!v.has_shape || !v.type_proto.empty()) continue;
    auto t = quant::io::read_tensor_pb(files[k].string());
    if (!t) continue;
    bool agrees = t->rank() == static_cast<int64_t>(v.shape.size());
    for (size_t i = 0; agrees && i < v.shape.size(); ++i) agrees = v.shape[i] < 0 || v.shape[i] == t->shape()[i];
    if (!agrees) v.has_shape = false;
  }
}

// Runs one test directory; nullopt when it passes.
std::optional<Failure> run_test(const fs::path& dir) {
  auto graph = quant::onnx_io::load_model((dir / "model.onnx").string());
  if (!graph) return refusal(graph.status());
  drop_contradicted_shapes(dir, **graph);
  auto session = quant::interp::Session::create(**graph);
  if (!session) return refusal(session.status());
  return run_sets(dir, **graph, **session);
}

// Forks, runs the test in the child and reads its verdict ("class\tmessage")
// through a pipe; nullopt when the test passes.
std::optional<Failure> run_isolated(const fs::path& dir) {
  int fds[2];
  if (pipe(fds) != 0) return Failure{"error", "pipe failed"};
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    alarm(kTimeLimitSeconds);
    std::optional<Failure> f = run_test(dir);
    std::string msg = f ? f->kind + "\t" + f->message : "";
    for (char& c : msg)
      if (c == '\n') c = ' ';
    if (write(fds[1], msg.data(), msg.size()) < 0) _exit(3);
    _exit(f ? 1 : 0);
  }
  close(fds[1]);
  std::string msg;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) msg.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    if (sig == SIGALRM) return Failure{"timeout", "no verdict after " + std::to_string(kTimeLimitSeconds) + " s"};
    return Failure{"crash", "signal " + std::to_string(sig)};
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return std::nullopt;
  const auto tab = msg.find('\t');
  if (tab == std::string::npos) return Failure{"crash", "exited without a verdict"};
  return Failure{msg.substr(0, tab), msg.substr(tab + 1)};
}

// "test_name class reason..." per line ('#' starts a comment); the reason is
// for the reader, the class is what a failure must match.
quant::Expected<std::map<std::string, Failure>> read_known_failures(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::bad_input(path + ": cannot read the known-failures file");
  std::map<std::string, Failure> known;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string name, kind, reason;
    fields >> name >> kind;
    if (name.empty()) continue;  // a line of blanks
    std::getline(fields >> std::ws, reason);
    if (!kClasses.count(kind))
      return Status::bad_input(path + ":" + std::to_string(number) + ": '" + kind +
                               "' is not a failure class (unsupported, mismatch, error, crash, timeout)");
    known[name] = {kind, reason};
  }
  if (in.bad()) return Status::bad_input(path + ": read error");
  return known;
}

int bad_input(const std::string& message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> roots;
  std::string known_path, filter, write_path;
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "error: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--known-failures") known_path = next();
    else if (a == "--filter") filter = next();
    else if (a == "--write-failures") write_path = next();
    else if (a == "--verbose") verbose = true;
    else if (a.rfind("--", 0) == 0) { std::fprintf(stderr, "error: unknown flag %s\n", a.c_str()); return 2; }
    else roots.push_back(a);
  }
  if (roots.empty()) {
    std::fprintf(stderr, "error: usage: conformance ROOT... [--known-failures FILE] [--filter TEXT] [--write-failures FILE]\n");
    return 2;
  }
  std::map<std::string, Failure> known;
  if (!known_path.empty()) {
    auto read = read_known_failures(known_path);
    if (!read) return bad_input(read.status().message());
    known = std::move(read).value();
  }
  for (const auto& root : roots)
    if (std::error_code ec; !fs::is_directory(root, ec)) return bad_input(root + ": not a directory of tests");
  int passed = 0, total = 0;
  std::vector<std::string> unexpected, fixed;
  std::map<std::string, Failure> failures;
  for (const auto& root : roots) {
    int root_passed = 0, root_total = 0;
    for (const auto& dir : sorted_dirs(root, "test_")) {
      const std::string name = dir.filename().string();
      if (!filter.empty() && name.find(filter) == std::string::npos) continue;
      if (!fs::exists(dir / "model.onnx")) continue;
      ++total, ++root_total;
      std::optional<Failure> why = run_isolated(dir);
      auto listed = known.find(name);
      if (!why) {
        ++passed, ++root_passed;
        if (listed != known.end()) fixed.push_back(name);
        if (verbose) std::printf("pass %s\n", name.c_str());
        continue;
      }
      failures[name] = *why;
      if (verbose) std::printf("FAIL %s: %s: %s\n", name.c_str(), why->kind.c_str(), why->message.c_str());
      if (listed == known.end())
        unexpected.push_back(name + ": " + why->kind + ": " + why->message);
      else if (listed->second.kind != why->kind)
        unexpected.push_back(name + ": fails as " + why->kind + ", listed as " + listed->second.kind + ": " + why->message);
    }
    std::printf("%s: %d/%d passed (%.1f%%)\n", root.c_str(), root_passed, root_total,
                root_total ? 100.0 * root_passed / root_total : 0.0);
  }
  if (!write_path.empty()) {
    std::ofstream out(write_path);
    out << "# Tests of the ONNX backend suite that qtool's interpreter does not pass yet: name, failure class\n"
        << "# (unsupported, mismatch, error, crash, timeout; a listed test must fail with its class), reason.\n"
        << "# Regenerate: build/conformance <roots> --write-failures <this file> (then review the reasons).\n";
    for (const auto& [name, why] : failures) out << name << "  " << why.kind << "  " << why.message << "\n";
    if (!out) return bad_input(write_path + ": cannot write");
  }
  for (const auto& n : fixed) std::printf("now passes (remove it from the known failures): %s\n", n.c_str());
  for (const auto& u : unexpected) std::printf("NEW FAILURE %s\n", u.c_str());
  std::printf("%d passed, %d failed\n", passed, total - passed);
  if (total == 0) return bad_input("no tests found (directories test_*/model.onnx) under the roots given" +
                                   std::string(filter.empty() ? "" : " matching --filter " + filter));
  return unexpected.empty() ? 0 : 1;
}
