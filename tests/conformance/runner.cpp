// ONNX backend conformance runner: runs every test directory (model.onnx +
// test_data_set_*/input_K.pb, output_K.pb) of the given roots through the
// interpreter and compares outputs (floats: |a-b| <= atol + rtol*|b|, others
// exact). Each test runs in a forked child with a time limit, so a crash or a
// hang in one op is reported as that test's failure, not the run's.
//
//   conformance ROOT... [--known-failures FILE] [--filter TEXT] [--write-failures FILE] [--verbose]
//
// Exit 1 when a test fails that the known-failures file does not list.
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

Status compare(const Tensor& got, const Tensor& want, size_t k) {
  const std::string where = "output " + std::to_string(k);
  if (got.dtype() != want.dtype())
    return Status::bad_input(where + " has type " + std::string(quant::dtype_name(got.dtype())) + ", expected " +
                             std::string(quant::dtype_name(want.dtype())));
  if (got.shape() != want.shape())
    return Status::bad_input(where + " has shape " + quant::dims_to_string(got.shape()) + ", expected " +
                             quant::dims_to_string(want.shape()));
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

// Runs one test directory; the Status says why it failed.
Status run_test(const fs::path& dir) {
  QT_ASSIGN_OR_RETURN(auto graph, quant::onnx_io::load_model((dir / "model.onnx").string()));
  QT_ASSIGN_OR_RETURN(auto session, quant::interp::Session::create(*graph));
  auto sets = sorted_dirs(dir, "test_data_set_");
  if (sets.empty()) return Status::bad_input("no test_data_set_* folder");
  for (const auto& set : sets) {
    std::vector<Tensor> inputs;
    for (const auto& f : sorted_files(set, "input_")) {
      QT_ASSIGN_OR_RETURN(Tensor t, quant::io::read_tensor_pb(f.string()));
      const size_t k = inputs.size();
      inputs.push_back(k < graph->inputs.size() ? relabel_bfloat16(std::move(t), graph->inputs[k]->dtype) : std::move(t));
    }
    // Inputs beyond the graph's (optional inputs given as initializers) are dropped.
    if (inputs.size() > graph->inputs.size()) inputs.resize(graph->inputs.size());
    auto outs = session->run(inputs);
    if (!outs) return outs.status();
    auto expected = sorted_files(set, "output_");
    if (expected.size() != outs->size())
      return Status::bad_input("produced " + std::to_string(outs->size()) + " outputs, expected " + std::to_string(expected.size()));
    for (size_t k = 0; k < expected.size(); ++k) {
      QT_ASSIGN_OR_RETURN(Tensor want, quant::io::read_tensor_pb(expected[k].string()));
      if (k < graph->outputs.size()) want = relabel_bfloat16(std::move(want), graph->outputs[k]->dtype);
      QT_RETURN_IF_ERROR(compare((*outs)[k], want, k));
    }
  }
  return Status::ok();
}

// Forks, runs the test in the child and reads its verdict through a pipe.
std::string run_isolated(const fs::path& dir) {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    alarm(kTimeLimitSeconds);
    Status st = run_test(dir);
    std::string msg = st.is_ok() ? "" : st.message();
    for (char& c : msg)
      if (c == '\n') c = ' ';
    if (write(fds[1], msg.data(), msg.size()) < 0) _exit(3);
    _exit(st.is_ok() ? 0 : 1);
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
    return sig == SIGALRM ? "timeout after " + std::to_string(kTimeLimitSeconds) + " s" : "crash: signal " + std::to_string(sig);
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  return msg.empty() ? "failed without a message" : msg;
}

// "test_name  reason..." per line; '#' starts a comment.
std::map<std::string, std::string> read_known_failures(const std::string& path) {
  std::map<std::string, std::string> known;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto sp = line.find_first_of(" \t");
    known[line.substr(0, sp)] = sp == std::string::npos ? "" : line.substr(line.find_first_not_of(" \t", sp));
  }
  return known;
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
  auto known = known_path.empty() ? std::map<std::string, std::string>{} : read_known_failures(known_path);
  int passed = 0, total = 0;
  std::vector<std::string> unexpected, fixed;
  std::map<std::string, std::string> failures;
  for (const auto& root : roots) {
    int root_passed = 0, root_total = 0;
    for (const auto& dir : sorted_dirs(root, "test_")) {
      const std::string name = dir.filename().string();
      if (!filter.empty() && name.find(filter) == std::string::npos) continue;
      if (!fs::exists(dir / "model.onnx")) continue;
      ++total, ++root_total;
      std::string why = run_isolated(dir);
      if (why.empty()) {
        ++passed, ++root_passed;
        if (known.count(name)) fixed.push_back(name);
        if (verbose) std::printf("pass %s\n", name.c_str());
        continue;
      }
      failures[name] = why;
      if (verbose) std::printf("FAIL %s: %s\n", name.c_str(), why.c_str());
      if (!known.empty() && !known.count(name)) unexpected.push_back(name + ": " + why);
    }
    std::printf("%s: %d/%d passed (%.1f%%)\n", root.c_str(), root_passed, root_total,
                root_total ? 100.0 * root_passed / root_total : 0.0);
  }
  if (!write_path.empty()) {
    std::ofstream out(write_path);
    out << "# Tests of the ONNX backend suite that qtool's interpreter does not pass yet, with the reason.\n"
        << "# Regenerate: build/conformance <roots> --write-failures <this file> (then review the reasons).\n";
    for (const auto& [name, why] : failures) out << name << "  " << why << "\n";
  }
  for (const auto& n : fixed) std::printf("now passes (remove it from the known failures): %s\n", n.c_str());
  for (const auto& u : unexpected) std::printf("NEW FAILURE %s\n", u.c_str());
  std::printf("%d passed, %d failed\n", passed, total - passed);
  return unexpected.empty() ? 0 : 1;
}
