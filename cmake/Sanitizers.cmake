# Sanitizer and fuzzing instrumentation for the whole tree.
#   -DQUANTD_SANITIZE=address,undefined   whole build (scripts/sanitize.sh asan)
#   -DQUANTD_SANITIZE=thread              core libraries + core tests (tsan)
#   -DQUANTD_FUZZ=ON (clang only)         also the tests/fuzz targets, and
#                                         libFuzzer coverage instrumentation of
#                                         the libraries they exercise
#                                         (quantd_fuzz_coverage)
# CMAKE_BUILD_TYPE=Sanitize gives -O1 -g1: fast to build, readable stacks.
# core/executor keeps its own -O2 (target option, it comes after these flags),
# so the real-model tests stay fast under ASan.
# project() already left these as empty cache entries for a build type it
# does not know, which a plain set(CACHE) would not replace: every sanitizer
# tree compiled at -O0 without line tables until this checked for it.
if(NOT CMAKE_CXX_FLAGS_SANITIZE)
  set(CMAKE_CXX_FLAGS_SANITIZE "-O1 -g1" CACHE STRING "C++ flags of the Sanitize build type" FORCE)
endif()
if(NOT CMAKE_C_FLAGS_SANITIZE)
  set(CMAKE_C_FLAGS_SANITIZE "-O1 -g1" CACHE STRING "C flags of the Sanitize build type" FORCE)
endif()
mark_as_advanced(CMAKE_CXX_FLAGS_SANITIZE CMAKE_C_FLAGS_SANITIZE)

if(QUANTD_FUZZ AND NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(WARNING "QUANTD_FUZZ needs clang (libFuzzer); fuzz targets are off")
  set(QUANTD_FUZZ OFF CACHE BOOL "" FORCE)
endif()

set(_quantd_instrument "")
if(QUANTD_SANITIZE)
  string(APPEND _quantd_instrument
         " -fsanitize=${QUANTD_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=undefined")
  add_compile_definitions(QUANTD_SANITIZED=1)
endif()
if(QUANTD_FUZZ)
  add_compile_definitions(QUANTD_FUZZING=1)
endif()
if(_quantd_instrument)
  string(APPEND CMAKE_CXX_FLAGS "${_quantd_instrument}")
  string(APPEND CMAKE_C_FLAGS "${_quantd_instrument}")
endif()
if(QUANTD_SANITIZE)
  string(APPEND CMAKE_EXE_LINKER_FLAGS " -fsanitize=${QUANTD_SANITIZE}")
  string(APPEND CMAKE_SHARED_LINKER_FLAGS " -fsanitize=${QUANTD_SANITIZE}")
endif()

# libFuzzer's coverage instrumentation (edge counters and compare tracing) for
# a library a fuzz target exercises. Only those (tests/fuzz/CMakeLists.txt):
# tracing every compare of the numeric kernels and the tests made the whole
# ASan suite 2-4x slower for coverage no fuzzer uses.
function(quantd_fuzz_coverage target)
  get_target_property(type ${target} TYPE)
  if(QUANTD_FUZZ AND NOT type STREQUAL "INTERFACE_LIBRARY")
    target_compile_options(${target} PRIVATE -fsanitize=fuzzer-no-link)
  endif()
endfunction()
