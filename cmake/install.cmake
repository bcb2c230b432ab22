# install() rules and the CPack .deb (included last from the top-level
# CMakeLists.txt, once every target exists).
#
#   cmake --install build --prefix /tmp/q            # everything
#   cmake --install build --component server ...     # one component
#   cpack --config build/CPackConfig.cmake -B build/package   # quantd_<ver>_<arch>.deb
#
# Components:
#   server  bin/quantd, share/quantd/tpc/ (an example site TPC for --tpc_dir)
#   cli     bin/quantctl
#   python  the gRPC client package quantd_client, its generated stubs
#           (quantd.v1, quantd_health) and, once it exists, the in-process
#           module (target quantd_python_module), under QUANTD_INSTALL_PYTHONDIR
#   doc     README.md, docs/*.md (share/doc/quantd), man pages if generated
# The image (docker/build_stage.sh) installs server and cli only.
include(GNUInstallDirs)

# Debian's directory for Python 3 packages of every minor version, the one the
# .deb must use (/usr/lib/python3/dist-packages). For another prefix put
# <prefix>/lib/python3/dist-packages on PYTHONPATH, or set this (e.g.
# lib/python3.11/dist-packages, on Debian's sys.path for /usr/local).
set(QUANTD_INSTALL_PYTHONDIR "lib/python3/dist-packages" CACHE STRING
    "Install directory of the Python packages, relative to the prefix")

if(TARGET quantd)
  install(TARGETS quantd RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
          COMPONENT server)
endif()
install(DIRECTORY ${QUANTD_SOURCE_ROOT}/deploy/k8s/base/tpc/
        DESTINATION ${CMAKE_INSTALL_DATADIR}/quantd/tpc COMPONENT server)
if(TARGET quantctl)
  install(TARGETS quantctl RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
          COMPONENT cli)
endif()

# Python: the client package from the source tree and the stubs that
# clients/python/CMakeLists.txt generates into <build>/python (only when
# grpc_python_plugin was found, so the target may be absent).
if(TARGET quantd_python_stubs)
  install(DIRECTORY ${QUANTD_SOURCE_ROOT}/clients/python/quantd_client
          DESTINATION ${QUANTD_INSTALL_PYTHONDIR} COMPONENT python
          PATTERN __pycache__ EXCLUDE PATTERN "*.pyc" EXCLUDE)
  install(DIRECTORY ${CMAKE_BINARY_DIR}/python/
          DESTINATION ${QUANTD_INSTALL_PYTHONDIR} COMPONENT python
          FILES_MATCHING PATTERN "*.py" PATTERN __pycache__ EXCLUDE)
endif()
# Hook for the in-process Python module (pybind11, issue 18 item 1): the
# extension goes into the `quantd` package folder, beside its pure-Python part
# (clients/python/quantd/, if that folder exists). A target property
# QUANTD_INSTALL_SUBDIR on the module names another folder ("" = top level).
if(TARGET quantd_python_module)
  get_target_property(_py_subdir quantd_python_module QUANTD_INSTALL_SUBDIR)
  if(_py_subdir STREQUAL "_py_subdir-NOTFOUND")
    set(_py_subdir quantd)
  endif()
  install(TARGETS quantd_python_module
          LIBRARY DESTINATION ${QUANTD_INSTALL_PYTHONDIR}/${_py_subdir}
          COMPONENT python)
endif()
if(EXISTS ${QUANTD_SOURCE_ROOT}/clients/python/quantd/__init__.py)
  install(DIRECTORY ${QUANTD_SOURCE_ROOT}/clients/python/quantd
          DESTINATION ${QUANTD_INSTALL_PYTHONDIR} COMPONENT python
          PATTERN __pycache__ EXCLUDE PATTERN "*.pyc" EXCLUDE)
endif()

install(FILES ${QUANTD_SOURCE_ROOT}/README.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT doc)
install(DIRECTORY ${QUANTD_SOURCE_ROOT}/docs/
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT doc
        FILES_MATCHING PATTERN "*.md")
# Man pages: whatever docs/man/ holds (section from the file name, quantd.1).
file(GLOB _man_pages CONFIGURE_DEPENDS ${QUANTD_SOURCE_ROOT}/docs/man/*.[1-9])
foreach(_page ${_man_pages})
  string(REGEX MATCH "[1-9]$" _section ${_page})
  install(FILES ${_page} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${_section}
          COMPONENT doc)
endforeach()

# One .deb with every component. dpkg-shlibdeps derives the shared-library
# dependencies from the binaries (libgrpc++1.51, libprotobuf32, ...); the
# Python client's are listed.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME quantd)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "gRPC service that quantizes ONNX models for a target platform")
set(CPACK_PACKAGE_DESCRIPTION
    "quantd (server), quantctl (command line client, batch farms) and the Python client.")
set(CPACK_PACKAGE_CONTACT "quantd maintainers <quantd@localhost>")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${CPACK_PACKAGE_CONTACT}")
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "python3, python3-grpcio, python3-protobuf")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3-numpy")
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_INSTALL_DIRECTORY quantd)
set(CPACK_COMPONENTS_ALL server cli python doc)
set(CPACK_DEB_COMPONENT_INSTALL OFF)
include(CPack)
