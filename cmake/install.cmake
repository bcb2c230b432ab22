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
#   python  the `quantd` package: in-process module (_quantd), gRPC client,
#           generated stubs (quantd.v1, quantd._health), under
#           QUANTD_PYTHON_INSTALL_DIR (clients/python/CMakeLists.txt)
#   doc     README.md, docs/*.md (share/doc/quantd), man pages if generated
# The image (docker/build_stage.sh) installs server and cli only.
include(GNUInstallDirs)

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

# Python: clients/python/CMakeLists.txt installs the `quantd` package (pure
# Python, generated stubs, the _quantd extension) under component python.

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
