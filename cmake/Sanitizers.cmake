# -DQUANTD_SANITIZE=address,undefined (whole build) or thread (core tests).
if(QUANTD_SANITIZE)
  set(_san_flags "-fsanitize=${QUANTD_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=undefined")
  string(APPEND CMAKE_CXX_FLAGS " ${_san_flags}")
  string(APPEND CMAKE_C_FLAGS " ${_san_flags}")
  string(APPEND CMAKE_EXE_LINKER_FLAGS " -fsanitize=${QUANTD_SANITIZE}")
  string(APPEND CMAKE_SHARED_LINKER_FLAGS " -fsanitize=${QUANTD_SANITIZE}")
  add_compile_definitions(QUANTD_SANITIZED=1)
endif()
