// SHA-256 against FIPS 180-2/180-4 vectors, through both compression paths:
// the portable one is forced with Sha256Path::kPortable, since on a SHA-NI
// host sha256_hex would never run it.
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include "libquant/core/sha256.h"
#include "tests/skip.h"

using quant::Sha256Path;
using quant::sha256_hex;

namespace {

const char* path_name(Sha256Path p) {
  if (p == Sha256Path::kPortable) return "portable";
  return quant::sha256_uses_sha_ni() ? "best (SHA-NI)" : "best (portable)";
}

}  // namespace

TEST_CASE("sha256: FIPS 180-2 test vectors", "[core][sha256]") {
  for (Sha256Path p : {Sha256Path::kPortable, Sha256Path::kBest}) {
    INFO("path " << path_name(p));
    CHECK(sha256_hex("", p) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    CHECK(sha256_hex("abc", p) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    // The 448-bit message (two blocks once padded).
    CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", p) ==
          "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    CHECK(sha256_hex(std::string(1000000, 'a'), p) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  }
  CHECK(sha256_hex("abc") == sha256_hex("abc", Sha256Path::kBest));
}

TEST_CASE("sha256: lengths around the padding boundaries", "[core][sha256]") {
  for (Sha256Path p : {Sha256Path::kPortable, Sha256Path::kBest}) {
    INFO("path " << path_name(p));
    // 55 bytes is the longest message whose padding fits one block; 56..63 need a second.
    CHECK(sha256_hex(std::string(55, 'a'), p) == "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
    CHECK(sha256_hex(std::string(56, 'a'), p) == "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
    CHECK(sha256_hex(std::string(63, 'a'), p) == "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34");
    CHECK(sha256_hex(std::string(64, 'a'), p) == "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
    CHECK(sha256_hex(std::string(65, 'a'), p) == "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0");
    CHECK(sha256_hex(std::string(119, 'a'), p) == "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb");
  }
}

TEST_CASE("sha256: all byte values, including those with the high bit set", "[core][sha256]") {
  std::string bytes;
  for (int r = 0; r < 3; ++r)
    for (int b = 0; b < 256; ++b) bytes += static_cast<char>(b);
  for (Sha256Path p : {Sha256Path::kPortable, Sha256Path::kBest}) {
    INFO("path " << path_name(p));
    CHECK(sha256_hex(bytes, p) == "f3a25aa93aa2fbba28d79260535bbd6a5eb0fc1c24a8b0f04e12b484c1dfe363");
  }
}

TEST_CASE("sha256: SHA-NI agrees with the portable path on random messages of every length up to 300 bytes",
          "[core][sha256]") {
  if (!quant::sha256_uses_sha_ni()) QTOOL_SKIP("no SHA-NI on this CPU: both paths are the portable one");
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> byte(0, 255);
  for (size_t n = 0; n <= 300; ++n) {
    std::string m(n, '\0');
    for (char& c : m) c = static_cast<char>(byte(rng));
    INFO("length " << n);
    CHECK(sha256_hex(m, Sha256Path::kPortable) == sha256_hex(m, Sha256Path::kBest));
  }
}
