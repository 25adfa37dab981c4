#!/usr/bin/env bash
# How scripts/setup.sh and CMakeLists.txt configure a build (issue 23, the first
# result within 5 minutes): a new build directory uses Ninja when it is
# installed, one configured with Make keeps Make; precompiled headers are on
# by default only without ccache and without -Werror (scripts/quickstart.sh asks
# for them), GCC takes them, one PCH serves every libquant module, another the
# apps. Builds only quant_core (five small files) to keep the test cheap.
source "$(dirname "$0")/lib.sh"
# Compile for real, as a user's first build does, and with setup.sh's own defaults (not CI's).
export CCACHE_DISABLE=1
unset QTOOL_CI QTOOL_WERROR QTOOL_BUILD_TYPE QTOOL_BUILD_TARGETS

# cache_value DIR NAME: the value CMake stored for NAME in DIR.
cache_value() { sed -n "s/^$2:[A-Z]*=//p" "$1/CMakeCache.txt"; }

# A new directory through setup.sh, PCH asked for as quickstart does.
fresh="$tmp/fresh"
QTOOL_BUILD_DIR="$fresh" QTOOL_BUILD_TARGETS=quant_core "$src/scripts/setup.sh" -DQTOOL_PCH=ON ||
  fail "setup.sh failed on a new directory: $(tail -n 20 "$fresh/build.log")"
generator=$(cache_value "$fresh" CMAKE_GENERATOR)
if command -v ninja >/dev/null; then
  [ "$generator" = Ninja ] || fail "a new build directory uses '$generator', not Ninja, though ninja is installed"
else
  [ "$generator" = "Unix Makefiles" ] || fail "without ninja a new build directory uses '$generator'"
fi
[ "$(cache_value "$fresh" QTOOL_PCH)" = ON ] || fail "-DQTOOL_PCH=ON was not kept"
core_pch="$fresh/CMakeFiles/quant_pch.dir/cmake_pch.hxx"
grep -q '#include <algorithm>' "$core_pch" || fail "quant_pch's PCH does not hold <algorithm>: $(cat "$core_pch")"
compgen -G "$fresh/CMakeFiles/quant_pch.dir/cmake_pch.hxx.gch" >/dev/null || fail "quant_pch's PCH was not built"
[ -f "$fresh/CMakeFiles/quant_core.dir/libquant/core/tensor.cpp.o" ] || fail "quant_core was not built"
# quant_core adds spdlog's macros to the PCH's flags; GCC must still take the PCH (-Winvalid-pch says when not).
! grep -q 'not used because' "$fresh/build.log" || fail "GCC refused the PCH: $(grep -m1 'not used because' "$fresh/build.log")"
# The other modules and the apps reuse one PCH each instead of parsing the headers again.
grep -rq "quant_pch.dir/cmake_pch.hxx" "$fresh/CMakeFiles/quant_interp.dir" "$fresh/build.ninja" 2>/dev/null ||
  fail "quant_interp does not reuse quant_pch's PCH"
apps_pch="$fresh/CMakeFiles/apps_common.dir/cmake_pch.hxx"
grep -q '#include <nlohmann/json.hpp>' "$apps_pch" || fail "the apps' PCH does not hold nlohmann/json"
# CLI11's namespace-scope validators would be compiled into every file of the apps.
! grep -q 'CLI' "$apps_pch" || fail "the apps' PCH holds CLI11"

# A directory configured with Make before keeps Make (CMake refuses to switch generators).
old="$tmp/old"
cmake -S "$src" -B "$old" -G "Unix Makefiles" -DQTOOL_PCH=OFF >"$tmp/old.log" 2>&1 ||
  fail "configuring with Make failed: $(tail -n 20 "$tmp/old.log")"
QTOOL_BUILD_DIR="$old" QTOOL_BUILD_TARGETS=quant_core "$src/scripts/setup.sh" ||
  fail "setup.sh failed on a Make directory: $(tail -n 20 "$old/build.log")"
[ "$(cache_value "$old" CMAKE_GENERATOR)" = "Unix Makefiles" ] || fail "setup.sh changed a Make directory's generator"
[ ! -e "$old/CMakeFiles/quant_pch.dir/cmake_pch.hxx" ] || fail "-DQTOOL_PCH=OFF still precompiles headers"

# With ccache as the launcher, or warnings as errors, the PCH is off unless asked for (configure only).
if command -v ccache >/dev/null; then
  cc="$tmp/ccache"
  cmake -S "$src" -B "$cc" -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >"$tmp/cc.log" 2>&1 ||
    fail "configuring with ccache failed: $(tail -n 20 "$tmp/cc.log")"
  [ "$(cache_value "$cc" QTOOL_PCH)" = OFF ] || fail "the PCH is on by default with ccache as the launcher"
fi
werror="$tmp/werror"
cmake -S "$src" -B "$werror" -DCMAKE_CXX_COMPILER_LAUNCHER=env -DQTOOL_WERROR=ON >"$tmp/werror.log" 2>&1 ||
  fail "configuring with -DQTOOL_WERROR=ON failed: $(tail -n 20 "$tmp/werror.log")"
[ "$(cache_value "$werror" QTOOL_PCH)" = OFF ] || fail "the PCH is on by default with warnings as errors"
plain="$tmp/plain"
cmake -S "$src" -B "$plain" -DCMAKE_CXX_COMPILER_LAUNCHER=env >"$tmp/plain.log" 2>&1 ||
  fail "configuring without ccache failed: $(tail -n 20 "$tmp/plain.log")"
[ "$(cache_value "$plain" QTOOL_PCH)" = ON ] || fail "the PCH is off by default without ccache"
echo "new directory: $generator with PCH; Make directory kept; PCH off by default with ccache or -Werror, on otherwise"
