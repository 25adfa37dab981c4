#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "libquant/core/file_util.h"
#include "libquant/io/npy.h"

using namespace quant;
using quant::io::parse_npy;
using quant::io::serialize_npy;

namespace {

std::string magic(int major) { return std::string("\x93NUMPY", 6) + static_cast<char>(major) + '\0'; }

// A v1.0 file with `dict` as header text (no padding rules) followed by `data`.
std::string npy_v1(const std::string& dict, const std::string& data) {
  std::string h = dict + "\n";
  return magic(1) + static_cast<char>(h.size() & 0xFF) + static_cast<char>(h.size() >> 8) + h + data;
}

std::string bytes_of(const std::vector<float>& v) { return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4); }

bool same_tensor(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), a.byte_size()) == 0;
}

std::string error_of(std::string_view bytes) {
  auto t = parse_npy(bytes, "data/x.npy");
  REQUIRE_FALSE(t.has_value());
  CHECK(t.status().code() == StatusCode::kBadInput);
  CHECK(t.status().message().rfind("data/x.npy: ", 0) == 0);
  return t.status().message();
}

}  // namespace

TEST_CASE("npy: writes the bytes numpy.save writes", "[io][npy]") {
  // Header lengths (0x76 = 118) and padding as numpy 1.24 produced them for
  // np.arange(3, dtype='<f4'), np.array(2.5) and np.arange(6, dtype='<i2').reshape(2, 3).
  auto expect = [](const std::string& dict, const std::string& data) {
    std::string h = dict;
    h += std::string(117 - dict.size(), ' ') + "\n";
    return magic(1) + "\x76" + std::string(1, '\0') + h + data;
  };
  SECTION("rank 1") {
    std::string got = serialize_npy(Tensor::from_vector<float>({3}, {0, 1, 2}));
    CHECK(got == expect("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", bytes_of({0, 1, 2})));
    CHECK(got.size() == 140);
  }
  SECTION("rank 0") {
    double v = 2.5;
    std::string got = serialize_npy(Tensor::scalar<double>(2.5));
    CHECK(got == expect("{'descr': '<f8', 'fortran_order': False, 'shape': (), }", std::string(reinterpret_cast<char*>(&v), 8)));
  }
  SECTION("rank 2") {
    std::string got = serialize_npy(Tensor::from_vector<int16_t>({2, 3}, {0, 1, 2, 3, 4, 5}));
    CHECK(got.substr(0, 128) == expect("{'descr': '<i2', 'fortran_order': False, 'shape': (2, 3), }", ""));
    CHECK((got.size() - 12) % 64 == 0);  // data starts 64-byte aligned
  }
  SECTION("the growth space after the shape can push the header to the next 64 bytes") {
    // numpy writes a 182-byte header (0xB6) for np.zeros((1,) * 15, dtype='<f4').
    std::string got = serialize_npy(Tensor(DType::Float32, Dims(15, 1)));
    CHECK(static_cast<unsigned char>(got[8]) == 0xB6);
    CHECK(got.size() == 10 + 182 + 4);
  }
}

TEST_CASE("npy: every supported dtype round-trips", "[io][npy]") {
  std::vector<Tensor> tensors = {
      Tensor::from_vector<float>({2, 2}, {1.5f, -2, 0, 3e38f}),
      Tensor::from_vector<double>({3}, {1e-300, -0.0, 7}),
      Tensor::from_vector<int8_t>({2}, {-128, 127}),
      Tensor::from_vector<uint8_t>({1, 1, 2}, {0, 255}),
      Tensor::from_vector<int16_t>({2}, {-32768, 32767}),
      Tensor::from_vector<uint16_t>({2}, {0, 65535}),
      Tensor::from_vector<int32_t>({1}, {-5}),
      Tensor::from_vector<uint32_t>({1}, {4000000000u}),
      Tensor::from_vector<int64_t>({2}, {INT64_MIN, INT64_MAX}),
      Tensor::from_vector<uint64_t>({1}, {UINT64_MAX}),
      Tensor::scalar<float>(4.25f),
      Tensor(DType::Float32, {0, 3}),
  };
  Tensor b(DType::Bool, {3});
  b.data<uint8_t>()[0] = 1;
  b.data<uint8_t>()[2] = 1;
  tensors.push_back(b);
  Tensor h(DType::Float16, {2});
  h.data<uint16_t>()[0] = 0x3C00;  // 1.0
  h.data<uint16_t>()[1] = 0xC000;  // -2.0
  tensors.push_back(h);
  for (const Tensor& t : tensors) {
    INFO(dtype_name(t.dtype()) << " " << dims_to_string(t.shape()));
    auto back = parse_npy(serialize_npy(t), "t.npy");
    REQUIRE(back.has_value());
    CHECK(same_tensor(*back, t));
  }
}

TEST_CASE("npy: types numpy lacks are widened losslessly", "[io][npy]") {
  Tensor bf(DType::BFloat16, {2});
  bf.data<uint16_t>()[0] = 0x3FC0;  // 1.5
  bf.data<uint16_t>()[1] = 0xC080;  // -4.0
  auto back = parse_npy(serialize_npy(bf), "bf.npy");
  REQUIRE(back.has_value());
  REQUIRE(back->dtype() == DType::Float32);
  CHECK(back->data<float>()[0] == 1.5f);
  CHECK(back->data<float>()[1] == -4.0f);

  Tensor i4(DType::Int4, {2});
  i4.data<int8_t>()[0] = -8;
  i4.data<int8_t>()[1] = 7;
  auto back4 = parse_npy(serialize_npy(i4), "i4.npy");
  REQUIRE(back4.has_value());
  CHECK(back4->dtype() == DType::Int8);
  CHECK(back4->data<int8_t>()[0] == -8);
}

TEST_CASE("npy: reads the header variants numpy and others write", "[io][npy]") {
  std::string data = bytes_of({1, 2, 3});
  SECTION("any key order, double quotes, no trailing comma, no padding") {
    auto t = parse_npy(npy_v1("{\"shape\": (3,), \"fortran_order\": False, \"descr\": \"<f4\"}", data), "x");
    REQUIRE(t.has_value());
    CHECK(t->shape() == Dims{3});
  }
  SECTION("Python 2 long suffix and '=' byte order") {
    auto t = parse_npy(npy_v1("{'descr': '=f4', 'fortran_order': False, 'shape': (1L, 3L), }", data), "x");
    REQUIRE(t.has_value());
    CHECK(t->shape() == Dims{1, 3});
  }
  SECTION("byte-sized types with any byte order mark") {
    auto t = parse_npy(npy_v1("{'descr': '<u1', 'fortran_order': False, 'shape': (2,), }", "\x01\x02"), "x");
    REQUIRE(t.has_value());
    CHECK(t->dtype() == DType::UInt8);
  }
  SECTION("bool bytes are normalised to 0/1") {
    auto t = parse_npy(npy_v1("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", std::string("\x00\x07", 2)), "x");
    REQUIRE(t.has_value());
    CHECK(t->data<uint8_t>()[1] == 1);
  }
  SECTION("versions 2.0 and 3.0 use a 4-byte header length") {
    for (int major : {2, 3}) {
      std::string h = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }\n";
      std::string file = magic(major) + static_cast<char>(h.size()) + std::string(3, '\0') + h + data;
      auto t = parse_npy(file, "x");
      REQUIRE(t.has_value());
      CHECK(t->data<float>()[2] == 3.0f);
    }
  }
}

TEST_CASE("npy: malformed files are refused with a message naming the file", "[io][npy]") {
  const std::string ok_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }";
  std::string data = bytes_of({1, 2, 3});
  CHECK(error_of("").find("bad magic") != std::string::npos);
  CHECK(error_of("PK\x03\x04 not npy at all").find("bad magic") != std::string::npos);
  CHECK(error_of(std::string("\x93NUMPY\x04\x00", 8) + "xx").find("version 4.0") != std::string::npos);
  CHECK(error_of(magic(1) + "\xff").find("header length") != std::string::npos);
  CHECK(error_of(magic(1) + "\x50" + std::string(1, '\0') + "{'descr'").find("ends inside the header") != std::string::npos);
  CHECK(error_of(npy_v1("{'descr': '>f4', 'fortran_order': False, 'shape': (3,), }", data)).find("big-endian dtype '>f4'") !=
        std::string::npos);
  CHECK(error_of(npy_v1("{'descr': '<f4', 'fortran_order': True, 'shape': (3,), }", data)).find("fortran_order") !=
        std::string::npos);
  CHECK(error_of(npy_v1("{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", data)) ==
        "data/x.npy: unsupported dtype '<c8' (supported: float16/32/64, int8/16/32/64, uint8/16/32/64, bool)");
  CHECK(error_of(npy_v1("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,), }", data)).find("structured") !=
        std::string::npos);
  CHECK(error_of(npy_v1("{'descr' '<f4', 'fortran_order': False, 'shape': (3,), }", data)).find("expected ':'") !=
        std::string::npos);
  CHECK(error_of(npy_v1("{'descr': '<f4', 'shape': (3,), }", data)).find("lacks") != std::string::npos);
  CHECK(error_of(npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'x': 1}", data)).find("unexpected key 'x'") !=
        std::string::npos);
  CHECK(error_of(npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (-3,), }", data)).find("shape") !=
        std::string::npos);
  CHECK(error_of(npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), } junk", data)).find("after the header") !=
        std::string::npos);
  CHECK(error_of(npy_v1("[1, 2]", data)).find("not a dict") != std::string::npos);
  CHECK(error_of(npy_v1(ok_dict, data.substr(0, 10))).find("data is short: 10 bytes") != std::string::npos);
  CHECK(error_of(npy_v1(ok_dict, data + "xxxx")).find("expected 12") != std::string::npos);
  // A header that declares ~10^24 elements must be refused before any allocation.
  CHECK(error_of(npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000, 1000000000000), }", data))
            .find("data is short") != std::string::npos);
  CHECK(error_of(npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", data))
            .find("too large") != std::string::npos);
}

TEST_CASE("npy: write_npy and read_npy go through files", "[io][npy]") {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("qtool_npy_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string path = (dir / "t.npy").string();
  Tensor t = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  REQUIRE(io::write_npy(path, t).is_ok());
  auto back = io::read_npy(path);
  REQUIRE(back.has_value());
  CHECK(same_tensor(*back, t));
  CHECK(io::write_npy(path, Tensor()).code() == StatusCode::kInternal);

  auto missing = io::read_npy((dir / "missing.npy").string());
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.status().message().find("missing.npy") != std::string::npos);
  REQUIRE(write_file_atomic(path, "garbage").is_ok());
  auto bad = io::read_npy(path);
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.status().message() == path + ": not a .npy file (bad magic)");
  fs::remove_all(dir);
}
