// External data (DESIGN "Large models"): save_model writes initializers to a
// data file beside the model, tensor by tensor; loading maps the large ones;
// the model and its data file appear together or not at all.
#include <catch2/catch.hpp>

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>
#include <vector>

#include "libquant/core/file_util.h"
#include "libquant/interp/session.h"
#include "libquant/io/external_data.h"
#include "libquant/onnx/model_io.h"
#include "libquant/passes/dynamic.h"

namespace fs = std::filesystem;

namespace {

quant::Tensor ramp(quant::Dims shape, float step) {
  quant::Tensor t(quant::DType::Float32, std::move(shape));
  for (int64_t i = 0; i < t.size(); ++i) t.data<float>()[i] = step * static_cast<float>(i % 97) - 1.0f;
  return t;
}

quant::ir::Value* constant(quant::ir::Graph& g, const std::string& name, quant::Tensor t) {
  quant::ir::Value* v = g.add_value(name);
  v->dtype = t.dtype();
  v->has_shape = true;
  v->shape = t.shape();
  v->dim_names.assign(v->shape.size(), "");
  v->constant = std::make_unique<quant::Tensor>(std::move(t));
  return v;
}

// y = x [1, 128] x w [128, 256] + b [256]: w is 128 KiB (mapped when read
// back), b 1 KiB, and an int4 tensor that is only stored.
std::unique_ptr<quant::ir::Graph> linear_graph() {
  auto g = std::make_unique<quant::ir::Graph>();
  g->opset_imports[""] = 21;
  g->ir_version = 10;
  quant::ir::Value* x = g->add_value("x");
  x->dtype = quant::DType::Float32;
  x->has_shape = true;
  x->shape = {1, 128};
  x->dim_names = {"", ""};
  g->inputs.push_back(x);
  quant::ir::Value* w = constant(*g, "w", ramp({128, 256}, 0.01f));
  quant::ir::Value* b = constant(*g, "b", ramp({256}, 0.5f));
  quant::Tensor q4(quant::DType::Int4, {5});
  for (int64_t i = 0; i < 5; ++i) q4.data<int8_t>()[i] = static_cast<int8_t>(i - 3);
  quant::ir::Value* q = constant(*g, "q4", std::move(q4));
  quant::ir::Value* xq = g->add_value("xq");
  quant::ir::Value* y = g->add_value("y");
  y->dtype = quant::DType::Float32;
  g->add_node("MatMul", {x, w}, {xq}, "mm");
  g->add_node("Add", {xq, b}, {y}, "add");
  g->outputs.push_back(y);
  quant::ir::Value* qo = g->add_value("q_out");
  qo->dtype = quant::DType::Int4;
  g->add_node("Identity", {q}, {qo}, "keep_q4");
  g->outputs.push_back(qo);
  return g;
}

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("qtool_external_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::vector<std::string> listing(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

onnx::ModelProto read_proto(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  onnx::ModelProto m;
  REQUIRE(m.ParseFromIstream(&in));
  return m;
}

std::vector<float> run_y(const quant::ir::Graph& g) {
  auto s = quant::interp::Session::create(g);
  INFO(s.status().message());
  REQUIRE(s.has_value());
  auto out = (*s)->run({ramp({1, 128}, 0.02f)});
  INFO(out.status().message());
  REQUIRE(out.has_value());
  auto v = (*out)[0].values<float>();
  return {v.begin(), v.end()};
}

}  // namespace

TEST_CASE("always: initializers above the threshold go to <model>.data and load back mapped", "[io][external]") {
  const fs::path dir = fresh_dir("always");
  auto g = linear_graph();
  const std::vector<float> want = run_y(*g);
  quant::onnx_io::SaveOptions o;
  o.external = quant::onnx_io::ExternalData::Always;
  const fs::path model = dir / "m.onnx";
  REQUIRE(quant::onnx_io::save_model(*g, model.string(), o).is_ok());
  CHECK(listing(dir) == std::vector<std::string>{"m.onnx", "m.onnx.data"});

  const onnx::ModelProto m = read_proto(model);
  std::map<std::string, std::map<std::string, std::string>> ext;
  for (const auto& t : m.graph().initializer()) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL) continue;
    for (const auto& kv : t.external_data()) ext[t.name()][kv.key()] = kv.value();
  }
  // w (128 KiB) and b (1 KiB, the threshold) are external; the 3-byte int4 tensor is inline.
  REQUIRE(ext.size() == 2);
  CHECK(ext["w"]["location"] == "m.onnx.data");
  CHECK(ext["w"]["length"] == std::to_string(128 * 256 * 4));
  CHECK(std::stoll(ext["w"]["offset"]) % 4096 == 0);
  CHECK(std::stoll(ext["b"]["offset"]) % 64 == 0);

  auto back = quant::onnx_io::load_model(model.string());
  INFO(back.status().message());
  REQUIRE(back.has_value());
  const quant::Tensor* w = quant::ir::constant_data((*back)->find_value("w"));
  REQUIRE(w != nullptr);
  CHECK(w->mapping() != nullptr);  // 128 KiB, aligned: mapped, not read
  CHECK(quant::ir::constant_data((*back)->find_value("b"))->mapping() == nullptr);  // small: read
  const quant::Tensor* q4 = quant::ir::constant_data((*back)->find_value("q4"));
  REQUIRE(q4 != nullptr);
  CHECK(q4->data<int8_t>()[0] == -3);
  CHECK(q4->data<int8_t>()[4] == 1);
  CHECK(run_y(**back) == want);
  fs::remove_all(dir);
}

TEST_CASE("auto keeps a small model in one file; never too; threshold 0 moves every tensor", "[io][external]") {
  const fs::path dir = fresh_dir("auto");
  auto g = linear_graph();
  REQUIRE(quant::onnx_io::save_model(*g, (dir / "a.onnx").string()).is_ok());
  quant::onnx_io::SaveOptions never;
  never.external = quant::onnx_io::ExternalData::Never;
  REQUIRE(quant::onnx_io::save_model(*g, (dir / "n.onnx").string(), never).is_ok());
  CHECK(listing(dir) == std::vector<std::string>{"a.onnx", "n.onnx"});
  quant::onnx_io::SaveOptions all;
  all.external = quant::onnx_io::ExternalData::Always;
  all.threshold = 0;
  REQUIRE(quant::onnx_io::save_model(*g, (dir / "z.onnx").string(), all).is_ok());
  const onnx::ModelProto z = read_proto(dir / "z.onnx");
  for (const auto& t : z.graph().initializer()) CHECK(t.data_location() == onnx::TensorProto::EXTERNAL);
  auto back = quant::onnx_io::load_model((dir / "z.onnx").string());
  REQUIRE(back.has_value());
  CHECK(run_y(**back) == run_y(*g));
  fs::remove_all(dir);
}

TEST_CASE("a spilled tensor is mapped back and written once; an uncommitted writer leaves nothing", "[io][external]") {
  const fs::path dir = fresh_dir("spill");
  const fs::path model = dir / "s.onnx";
  {
    auto w = quant::io::ExternalDataWriter::create(quant::onnx_io::external_data_path(model.string()));
    REQUIRE(w.has_value());
    REQUIRE((*w)->spill(ramp({1000}, 1.0f)).has_value());
    CHECK(listing(dir).size() == 1);  // the temporary file only
  }
  CHECK(listing(dir).empty());

  auto g = linear_graph();
  auto writer = quant::io::ExternalDataWriter::create(quant::onnx_io::external_data_path(model.string()));
  REQUIRE(writer.has_value());
  quant::ir::Value* wv = g->find_value("w");
  const quant::Tensor original = *wv->constant;
  auto spilled = (*writer)->spill(std::move(*wv->constant));
  REQUIRE(spilled.has_value());
  REQUIRE(spilled->mapping() != nullptr);
  CHECK(std::memcmp(spilled->raw(), original.raw(), original.byte_size()) == 0);
  REQUIRE((*writer)->find(*spilled).has_value());
  CHECK((*writer)->find(original) == std::nullopt);
  // A copy owns its bytes; writing to it changes neither the mapping nor the file.
  quant::Tensor copy = *spilled;
  CHECK(copy.mapping() == nullptr);
  copy.data<float>()[0] = 42.0f;
  CHECK(spilled->data<float>()[0] == original.data<float>()[0]);
  *wv->constant = std::move(*spilled);
  const int64_t after_spill = (*writer)->bytes_written();

  quant::onnx_io::SaveOptions o;  // auto: external because the writer holds a tensor
  o.writer = writer->get();
  o.threshold = 1 << 20;          // nothing else is large enough to be appended
  REQUIRE(quant::onnx_io::save_model(*g, model.string(), o).is_ok());
  CHECK((*writer)->bytes_written() == after_spill);  // w was not written twice
  CHECK(listing(dir) == std::vector<std::string>{"s.onnx", "s.onnx.data"});
  auto back = quant::onnx_io::load_model(model.string());
  REQUIRE(back.has_value());
  CHECK(run_y(**back) == run_y(*linear_graph()));
  fs::remove_all(dir);
}

TEST_CASE("a failed save leaves neither the model nor its data file", "[io][external]") {
  const fs::path dir = fresh_dir("failed");
  auto g = linear_graph();
  quant::onnx_io::SaveOptions o;
  o.external = quant::onnx_io::ExternalData::Always;
  // The model's name is taken by a directory: the final rename fails.
  fs::create_directories(dir / "m.onnx" / "inside");
  CHECK_FALSE(quant::onnx_io::save_model(*g, (dir / "m.onnx").string(), o).is_ok());
  CHECK(listing(dir) == std::vector<std::string>{"m.onnx"});
  CHECK(quant::onnx_io::save_model(*g, (dir / "missing" / "m.onnx").string(), o).code() ==
        quant::StatusCode::kBadInput);
  fs::remove_all(dir);
}

TEST_CASE("the dynamic pass streaming keeps each quantized weight in the data file, not in memory", "[io][external]") {
  const fs::path dir = fresh_dir("stream");
  const fs::path model = dir / "d.onnx";
  auto g = linear_graph();
  auto writer = quant::io::ExternalDataWriter::create(quant::onnx_io::external_data_path(model.string()));
  REQUIRE(writer.has_value());
  quant::passes::DynamicOptions o;
  o.spill = [&](quant::Tensor t) { return (*writer)->spill(std::move(t)); };
  auto report = quant::passes::quantize_dynamic(*g, o);
  INFO(report.status().message());
  REQUIRE(report.has_value());
  // The float weight is gone; its int8 form (32 KiB) is a mapping of the data file.
  CHECK(g->find_value("w") == nullptr);
  int64_t mapped = 0;
  for (const quant::ir::Value* v : g->initializers())
    if (v->name() != "b" && v->constant->byte_size() >= 1024) {  // b: the model's own, kept float
      INFO(v->name());
      CHECK((*writer)->find(*v->constant).has_value());
      mapped += static_cast<int64_t>(v->constant->byte_size());
    }
  CHECK(mapped >= 128 * 256);
  const int64_t spilled = (*writer)->bytes_written();
  quant::onnx_io::SaveOptions so;
  so.writer = writer->get();
  REQUIRE(quant::onnx_io::save_model(*g, model.string(), so).is_ok());
  // Saving wrote only what was not spilled (the 1 KiB bias, aligned), nothing twice.
  CHECK((*writer)->bytes_written() <= spilled + 4096 + 1024);
  auto back = quant::onnx_io::load_model(model.string());
  REQUIRE(back.has_value());
  const std::vector<float> want = run_y(*linear_graph()), got = run_y(**back);
  double err = 0, ref = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    err += (want[i] - got[i]) * (want[i] - got[i]);
    ref += want[i] * want[i];
  }
  CHECK(10 * std::log10(ref / err) > 30);
  fs::remove_all(dir);
}

TEST_CASE("spill_bytes writes a caller's buffer once and maps it back; int4 and Bool are refused", "[io][external]") {
  const fs::path dir = fresh_dir("spill_bytes");
  auto w = quant::io::ExternalDataWriter::create(quant::onnx_io::external_data_path((dir / "b.onnx").string()));
  REQUIRE(w.has_value());
  std::vector<int8_t> codes(5000);
  for (size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<int8_t>(i * 7);
  auto t = (*w)->spill_bytes(quant::DType::Int8, {50, 100}, codes.data());
  REQUIRE(t.has_value());
  REQUIRE(t->mapping() != nullptr);
  CHECK(t->shape() == quant::Dims{50, 100});
  CHECK(std::memcmp(std::as_const(*t).raw(), codes.data(), codes.size()) == 0);
  CHECK((*w)->bytes_written() == 5000);
  REQUIRE((*w)->find(*t).has_value());
  CHECK((*w)->find(*t)->offset == 0);
  CHECK_FALSE((*w)->spill_bytes(quant::DType::Int4, {10}, codes.data()).has_value());
  CHECK_FALSE((*w)->spill_bytes(quant::DType::Bool, {10}, codes.data()).has_value());
  CHECK((*w)->bytes_written() == 5000);
  w->reset();
  fs::remove_all(dir);
}
