// One field of the mapping that holds an address, from /proc/self/smaps
// (proc(5)): what the tests of memory placement read (huge-page advice,
// pages resident), per mapping, whatever else the process allocates.
#pragma once

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

namespace quant::testing {

// The line of the mapping holding `p` that starts with `field` ("Rss:",
// "VmFlags:"), or "" when there is none.
inline std::string smaps_line(const void* p, const std::string& field) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2)  // a mapping's header line
      inside = at >= lo && at < hi;
    else if (inside && line.rfind(field, 0) == 0)
      return line;
  }
  return "";
}

// The pages this process has of the mapping holding `p` (its Rss), in bytes; -1 if none holds it.
inline int64_t smaps_resident_bytes(const void* p) {
  const std::string line = smaps_line(p, "Rss:");
  long kb = 0;
  return std::sscanf(line.c_str(), "Rss: %ld kB", &kb) == 1 ? int64_t{kb} * 1024 : -1;
}

}  // namespace quant::testing
