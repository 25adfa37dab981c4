#include <catch2/catch.hpp>

#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>

#include "libquant/io/dataset.h"
#include "libquant/io/npy.h"
#include "libquant/io/tensor_proto.h"

using namespace quant;
namespace fs = std::filesystem;

namespace {

// A fresh directory under the system temp dir, removed when the test ends.
struct TempDir {
  fs::path path;
  TempDir() {
    static std::atomic<int> counter{0};
    path = fs::temp_directory_path() / ("qtool_dataset_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& rel) const { return (path / rel).string(); }
  std::string str() const { return path.string(); }
};

void write_text(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

void write_npy_value(const std::string& path, float v) {
  fs::create_directories(fs::path(path).parent_path());
  REQUIRE(io::write_npy(path, Tensor::from_vector<float>({1}, {v})).is_ok());
}

void write_pb_value(const std::string& path, float v) {
  fs::create_directories(fs::path(path).parent_path());
  onnx::TensorProto p;
  io::tensor_to_proto(Tensor::from_vector<float>({1}, {v}), "x", &p);
  std::ofstream(path, std::ios::binary) << p.SerializeAsString();
}

std::string message_of(const Status& s) {
  CHECK(s.code() == StatusCode::kBadInput);
  return s.message();
}

}  // namespace

TEST_CASE("dataset: a directory of .npy files is one sample per file, sorted", "[io][dataset]") {
  TempDir d;
  write_npy_value(d / "b.npy", 2);
  write_npy_value(d / "a.npy", 1);
  write_npy_value(d / "c.npy", 3);
  write_text(d / "model.onnx", "not read");
  write_text(d / "README", "ignored");
  write_text(d / ".hidden.npy", "ignored");

  auto samples = io::list_samples(d.str(), {});
  REQUIRE(samples.has_value());
  REQUIRE(samples->size() == 3);
  CHECK((*samples)[0].stem == "a");
  CHECK((*samples)[2].stem == "c");
  REQUIRE((*samples)[1].files.size() == 1);
  CHECK((*samples)[1].files[0].first == "#0");
  CHECK((*samples)[1].files[0].second == d / "b.npy");

  auto limited = io::list_samples(d.str(), {.limit = 2});
  REQUIRE(limited.has_value());
  CHECK(limited->size() == 2);

  auto tensors = io::load_sample((*samples)[1], {"input"});
  REQUIRE(tensors.has_value());
  REQUIRE(tensors->size() == 1);
  CHECK((*tensors)[0].data<float>()[0] == 2.0f);

  // A single-input layout given to a two-input model names the missing input.
  auto two = io::load_sample((*samples)[0], {"x", "y"});
  REQUIRE_FALSE(two.has_value());
  CHECK(message_of(two.status()).find("sample 'a': no file for model input 'y'") != std::string::npos);
}

TEST_CASE("dataset: ONNX test-data folders bind input_<k>.pb by position", "[io][dataset]") {
  TempDir d;
  write_pb_value(d / "test_data_set_1/input_0.pb", 10);
  write_pb_value(d / "test_data_set_1/input_1.pb", 11);
  write_pb_value(d / "test_data_set_1/output_0.pb", 99);
  write_pb_value(d / "test_data_set_0/input_1.pb", 1);
  write_pb_value(d / "test_data_set_0/input_0.pb", 0);
  write_text(d / "model.onnx", "not read");

  auto samples = io::list_samples(d.str(), {});
  REQUIRE(samples.has_value());
  REQUIRE(samples->size() == 2);
  CHECK((*samples)[0].stem == "test_data_set_0");
  CHECK((*samples)[1].files.size() == 2);  // output_0.pb ignored

  auto tensors = io::load_sample((*samples)[1], {"a", "b"});
  REQUIRE(tensors.has_value());
  CHECK((*tensors)[0].data<float>()[0] == 10.0f);
  CHECK((*tensors)[1].data<float>()[0] == 11.0f);

  auto too_few = io::load_sample((*samples)[0], {"only"});
  REQUIRE_FALSE(too_few.has_value());
  CHECK(message_of(too_few.status()).find("input_1.pb: gives input #1 but the model has 1 input(s): only") !=
        std::string::npos);
}

TEST_CASE("dataset: folders of <input-name>.npy bind by name", "[io][dataset]") {
  TempDir d;
  write_npy_value(d / "s0/mask.npy", 5);
  write_npy_value(d / "s0/image.npy", 6);
  write_npy_value(d / "s1/image.npy", 7);
  write_npy_value(d / "s1/mask.npy", 8);
  auto samples = io::list_samples(d.str(), {});
  REQUIRE(samples.has_value());
  auto tensors = io::load_sample((*samples)[0], {"image", "mask"});
  REQUIRE(tensors.has_value());
  CHECK((*tensors)[0].data<float>()[0] == 6.0f);
  CHECK((*tensors)[1].data<float>()[0] == 5.0f);

  auto wrong = io::load_sample((*samples)[1], {"image", "pixels"});
  REQUIRE_FALSE(wrong.has_value());
  CHECK(message_of(wrong.status()) ==
        d / "s1/mask.npy" + ": the model has no input named 'mask' (model inputs: image, pixels)");
}

TEST_CASE("dataset: an input given twice in one folder is refused", "[io][dataset]") {
  TempDir d;
  write_npy_value(d / "s0/x.npy", 1);
  write_pb_value(d / "s0/input_0.pb", 2);
  auto samples = io::list_samples(d.str(), {});
  REQUIRE(samples.has_value());
  auto t = io::load_sample((*samples)[0], {"x"});
  REQUIRE_FALSE(t.has_value());
  CHECK(message_of(t.status()).find("input 'x' is already given by") != std::string::npos);
}

TEST_CASE("dataset: a corrupt file is reported by path", "[io][dataset]") {
  TempDir d;
  write_text(d / "bad.npy", "garbage");
  auto samples = io::list_samples(d.str(), {});
  REQUIRE(samples.has_value());
  auto t = io::load_sample((*samples)[0], {"x"});
  REQUIRE_FALSE(t.has_value());
  CHECK(message_of(t.status()) == d / "bad.npy" + ": not a .npy file (bad magic)");

  write_text(d / "p/input_0.pb", "\xff\xff\xff garbage");
  fs::remove(d / "bad.npy");
  auto pb_samples = io::list_samples(d.str(), {});
  REQUIRE(pb_samples.has_value());
  auto pb = io::load_sample((*pb_samples)[0], {"x"});
  REQUIRE_FALSE(pb.has_value());
  CHECK(message_of(pb.status()).find(d / "p/input_0.pb") != std::string::npos);
}

TEST_CASE("dataset: unusable directories are errors naming the directory", "[io][dataset]") {
  TempDir d;
  SECTION("missing") {
    auto s = io::list_samples(d / "nope", {});
    REQUIRE_FALSE(s.has_value());
    CHECK(message_of(s.status()) == d / "nope" + ": data directory does not exist");
  }
  SECTION("a file, not a directory") {
    write_npy_value(d / "one.npy", 1);
    auto s = io::list_samples(d / "one.npy", {});
    REQUIRE_FALSE(s.has_value());
    CHECK(message_of(s.status()).find("is not a directory") != std::string::npos);
  }
  SECTION("empty") {
    write_text(d / "README", "no samples here");
    auto s = io::list_samples(d.str(), {});
    REQUIRE_FALSE(s.has_value());
    CHECK(message_of(s.status()).rfind(d.str() + ": no samples", 0) == 0);
  }
  SECTION("both forms mixed") {
    write_npy_value(d / "a.npy", 1);
    write_npy_value(d / "s0/x.npy", 1);
    auto s = io::list_samples(d.str(), {});
    REQUIRE_FALSE(s.has_value());
    CHECK(message_of(s.status()).find(d.str() + ": mixes .npy files") == 0);
  }
  SECTION("a sample folder without inputs") {
    write_npy_value(d / "s0/x.npy", 1);
    write_pb_value(d / "s1/output_0.pb", 1);
    auto s = io::list_samples(d.str(), {});
    REQUIRE_FALSE(s.has_value());
    CHECK(message_of(s.status()).find(d / "s1" + ": sample folder holds no") == 0);
    // A model without inputs (test_constant's layout): each folder is one run.
    io::DatasetOptions none;
    none.model_has_inputs = false;
    auto runs = io::list_samples(d.str(), none);
    REQUIRE(runs.has_value());
    REQUIRE(runs->size() == 2);
    CHECK((*runs)[1].stem == "s1");
    CHECK((*runs)[1].files.empty());
  }
}
