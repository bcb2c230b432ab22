# Small house macros in the spirit of absl_cc_library / absl_cc_test.

get_filename_component(QUANTD_SOURCE_ROOT ${CMAKE_CURRENT_LIST_DIR}/.. ABSOLUTE)

function(quantd_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter
                         -Wno-missing-field-initializers)
  if(QUANTD_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# Numeric hot paths (calibration, parameter search, training) keep -O2 in the
# sanitizer trees (build type Sanitize is -O1): at -O1 the real-model tests ran
# 3-5x longer under ASan. Like core/executor's, a target option after the
# build type's flags.
function(quantd_hot_path target)
  target_compile_options(${target} PRIVATE $<$<CONFIG:Sanitize>:-O2>)
endfunction()

# AVX2/FMA for Eigen's GEMM and the vectorised loops (x86-64-v3, 2013+ CPUs);
# turn off for older targets.
option(QUANTD_EXECUTOR_AVX2 "Compile the Eigen kernel libraries with -mavx2 -mfma" ON)

# Every library that instantiates Eigen's kernels (executor, train, autodiff)
# compiles them with the same flags: a binary keeps one copy of each inline
# Eigen function, from whichever library the linker meets first, so different
# flags made a binary's numbers depend on its link order (quantd and the test
# binaries disagreed in the last bits of a job's figures). -O3 (-O2 in the
# sanitizer trees: 11% less compile time for nearly the speed), Eigen
# single-threaded (parallelism comes from our pool).
function(quantd_eigen_kernels target)
  target_compile_options(${target} PRIVATE $<IF:$<CONFIG:Sanitize>,-O2,-O3>)
  target_compile_definitions(${target} PRIVATE EIGEN_DONT_PARALLELIZE)
  if(QUANTD_EXECUTOR_AVX2 AND CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
    target_compile_options(${target} PRIVATE -mavx2 -mfma)
  endif()
endfunction()

# Precompiled standard/absl/protobuf headers (cmake/pch/quantd_pch.h) for a
# target of several source files: CI builds the tree cold twice (ASan, TSan)
# and each file spent 1-1.5 s parsing them. Default off under ccache, which
# would not cache the files that use a precompiled header.
if(CMAKE_CXX_COMPILER_LAUNCHER MATCHES "ccache")
  set(QUANTD_PCH_DEFAULT OFF)
else()
  set(QUANTD_PCH_DEFAULT ON)
endif()
option(QUANTD_PCH "Precompile the common system headers per library"
       ${QUANTD_PCH_DEFAULT})

function(quantd_precompile_headers target)
  get_target_property(srcs ${target} SOURCES)
  list(FILTER srcs INCLUDE REGEX "\\.cc$")
  list(LENGTH srcs n)
  if(QUANTD_PCH AND n GREATER 2)
    target_precompile_headers(${target} PRIVATE
                              ${QUANTD_SOURCE_ROOT}/cmake/pch/quantd_pch.h)
  endif()
endfunction()

# quantd_cc_library(NAME quantd_core_tpc SRCS a.cc HDRS a.h DEPS x y)
function(quantd_cc_library)
  cmake_parse_arguments(Q "" "NAME" "SRCS;HDRS;DEPS" ${ARGN})
  if(Q_SRCS)
    add_library(${Q_NAME} STATIC ${Q_SRCS} ${Q_HDRS})
    target_include_directories(${Q_NAME} PUBLIC ${QUANTD_SOURCE_ROOT})
    target_link_libraries(${Q_NAME} PUBLIC ${Q_DEPS})
    quantd_warnings(${Q_NAME})
    quantd_precompile_headers(${Q_NAME})
  else()
    add_library(${Q_NAME} INTERFACE)
    target_include_directories(${Q_NAME} INTERFACE ${QUANTD_SOURCE_ROOT})
    target_link_libraries(${Q_NAME} INTERFACE ${Q_DEPS})
  endif()
endfunction()

# quantd_cc_test(NAME tpc_validation_test SRCS t.cc DEPS lib [LABELS core]
#                [TIMEOUT 120] [FIXTURE e2e_models] [COST 100])
# COST: ctest -j starts costlier tests first, so the longest ones do not run
# alone at the end of the run.
function(quantd_cc_test)
  cmake_parse_arguments(Q "" "NAME;TIMEOUT;FIXTURE;COST" "SRCS;DEPS;LABELS" ${ARGN})
  add_executable(${Q_NAME} ${Q_SRCS})
  target_link_libraries(${Q_NAME} PRIVATE ${Q_DEPS} GTest::gmock GTest::gtest_main)
  # A test binary compiles as one translation unit (CMake unity build): test
  # files spend most of their compile time parsing the same gtest, absl and
  # protobuf headers, and CI builds every test twice (ASan, TSan).
  set_target_properties(${Q_NAME} PROPERTIES UNITY_BUILD ON
                                             UNITY_BUILD_BATCH_SIZE 0)
  quantd_warnings(${Q_NAME})
  if(NOT Q_TIMEOUT)
    set(Q_TIMEOUT 300)
  endif()
  # gtest_discover_tests splits list-valued properties (below): a second
  # label would become a bogus property name and be lost.
  list(LENGTH Q_LABELS n_labels)
  if(n_labels GREATER 1)
    message(FATAL_ERROR "quantd_cc_test(${Q_NAME}): one label only, not "
            "'${Q_LABELS}' (use a compound label such as farm_integration)")
  endif()
  # FIXTURE: one ctest fixture the test needs (e.g. e2e_models: real models
  # and ONNX Runtime installed by scripts/fetch_models.sh).
  set(extra_props)
  if(Q_COST)
    list(APPEND extra_props COST ${Q_COST})
  endif()
  if(Q_FIXTURE)
    list(APPEND extra_props FIXTURES_REQUIRED ${Q_FIXTURE})
  endif()
  # gtest_discover_tests splits list-valued properties: one value each, so
  # the environment carries one variable.
  gtest_discover_tests(${Q_NAME}
    PROPERTIES TIMEOUT ${Q_TIMEOUT} LABELS "${Q_LABELS}" ${extra_props}
               ENVIRONMENT "QUANTD_SOURCE_DIR=${QUANTD_SOURCE_ROOT}"
    DISCOVERY_TIMEOUT 60)
endfunction()

# Adds every immediate subdirectory that has a CMakeLists.txt, so that parallel
# work on separate folders never edits a shared list.
function(quantd_add_subdirectories)
  file(GLOB children RELATIVE ${CMAKE_CURRENT_SOURCE_DIR} CONFIGURE_DEPENDS
       ${CMAKE_CURRENT_SOURCE_DIR}/*/CMakeLists.txt)
  list(SORT children)
  foreach(child ${children})
    get_filename_component(dir ${child} DIRECTORY)
    add_subdirectory(${dir})
  endforeach()
endfunction()
