// libFuzzer target: ONNX TensorProto (.pb) import, including external data
// resolved against a scratch folder that holds one small data file.
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "libquant/io/tensor_proto.h"

namespace {
std::string g_dir;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  namespace fs = std::filesystem;
  g_dir = (fs::temp_directory_path() / ("qtool-fuzz-pb-" + std::to_string(::getpid()))).string();
  fs::create_directories(g_dir + "/sub");
  std::ofstream(g_dir + "/data.bin", std::ios::binary) << std::string(256, '\x3f');
  std::ofstream(g_dir + "/sub/data.bin", std::ios::binary) << std::string(16, '\x01');
  quant::set_max_tensor_bytes(int64_t{64} << 20);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  onnx::TensorProto proto;
  if (!proto.ParseFromArray(data, static_cast<int>(size))) return 0;
  auto t = quant::io::tensor_from_proto(proto, g_dir);
  if (!t) {
    if (t.status().code() != quant::StatusCode::kBadInput) std::abort();
    return 0;
  }
  // Round trip: what qtool writes it must read back.
  onnx::TensorProto out;
  quant::io::tensor_to_proto(*t, proto.name(), &out);
  auto back = quant::io::tensor_from_proto(out, g_dir);
  if (!back || back->shape() != t->shape() || back->dtype() != t->dtype()) std::abort();
  return 0;
}
