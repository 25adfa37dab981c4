// quant::prefetch: readahead advice on a mapped range starts disk reads
// and changes nothing the region reads (DESIGN "Large models").
#include <catch2/catch.hpp>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "libquant/core/readahead.h"

TEST_CASE("mapped_file: prefetch leaves the bytes as in the file", "[core][mapped_file]") {
  const std::string path = "/tmp/qtool_mapped_prefetch_" + std::to_string(::getpid()) + ".bin";
  std::vector<uint8_t> bytes(3 * 4096 + 123);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 131 + 7);
  {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  // An offset off the page boundary: the advice covers the page-aligned mapping.
  const int64_t offset = 100, length = static_cast<int64_t>(bytes.size()) - 150;
  auto region = quant::MappedRegion::map(path, offset, length);
  REQUIRE(region);
  CHECK(quant::prefetch(**region));
  const auto* p = reinterpret_cast<const uint8_t*>((*region)->data());
  CHECK(std::vector<uint8_t>(p, p + length) == std::vector<uint8_t>(bytes.begin() + offset, bytes.begin() + offset + length));
  // Nothing mapped: no advice to give.
  auto empty = quant::MappedRegion::map(path, 0, 0);
  REQUIRE(empty);
  CHECK_FALSE(quant::prefetch(**empty));
  std::remove(path.c_str());
}
