# `cmake --install` layout (prefix-relative, so the tree can move):
#   bin/metaguard-tidy                      the driver
#   lib/metaguard/libmetaguard_tidy.so      the clang-tidy plugin, found by the driver beside it
#   lib/metaguard/libmetaguard_tidy-llvm<N>.so   the plugins for further LLVM majors
#   lib/metaguard/metaguard_*.py            the driver's modules
#   lib/metaguard/metaguard-version.txt     the version they report
#   <libdir>/libmetaguard.a, include/metaguard/   the runtime
#   <libdir>/cmake/metaguard/               find_package(metaguard CONFIG)
#   share/metaguard/checks/*.md             the check pages (SARIF rule descriptions)
#   share/metaguard/examples/               the examples, with a stand-alone CMakeLists.txt
#   share/doc/metaguard/                    README and docs
# Everything is component "metaguard" except metaguard-clangd (component
# "clangd"), so that CPack makes it a package of its own.
include(CMakePackageConfigHelpers)

set(METAGUARD_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/metaguard)
set(METAGUARD_INSTALL_PLUGINDIR lib/metaguard)

if(TARGET metaguard)
  install(TARGETS metaguard EXPORT metaguardTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT metaguard
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT metaguard)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime/include/metaguard
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT metaguard)
  # A static archive is not stripped by --strip/CPACK_STRIP_FILES; its debug
  # information is most of its size (~190 MB of ~200 MB in RelWithDebInfo).
  install(CODE "
    if(CMAKE_INSTALL_DO_STRIP)
      execute_process(COMMAND \"${CMAKE_STRIP}\" --strip-debug
        \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/$<TARGET_FILE_NAME:metaguard>\")
    endif()" COMPONENT metaguard)
  install(EXPORT metaguardTargets NAMESPACE metaguard::
    DESTINATION ${METAGUARD_INSTALL_CMAKEDIR} COMPONENT metaguard)
endif()

if(TARGET metaguard_tidy)
  install(TARGETS metaguard_tidy
    LIBRARY DESTINATION ${METAGUARD_INSTALL_PLUGINDIR} COMPONENT metaguard)
  # One plugin per further major, side by side (MetaguardExtraLlvm.cmake);
  # the driver pairs each with the clang-tidy of its major.
  if(METAGUARD_EXTRA_PLUGINS)
    install(PROGRAMS ${METAGUARD_EXTRA_PLUGINS}
      DESTINATION ${METAGUARD_INSTALL_PLUGINDIR} COMPONENT metaguard)
  endif()
endif()
install(PROGRAMS ${PROJECT_SOURCE_DIR}/tools/metaguard-tidy
  DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT metaguard)
file(GLOB METAGUARD_DRIVER_MODULES ${PROJECT_SOURCE_DIR}/tools/metaguard_*.py)
install(FILES ${METAGUARD_DRIVER_MODULES}
  DESTINATION ${METAGUARD_INSTALL_PLUGINDIR} COMPONENT metaguard)
# The installed driver has no CMakeLists.txt to read its version from
# (tools/metaguard_version.py): it reads this file beside its modules.
file(WRITE ${PROJECT_BINARY_DIR}/metaguard-version.txt "${PROJECT_VERSION}\n")
install(FILES ${PROJECT_BINARY_DIR}/metaguard-version.txt
  DESTINATION ${METAGUARD_INSTALL_PLUGINDIR} COMPONENT metaguard)

# ---- metaguard-clangd -----------------------------------------------------
# Built only with METAGUARD_BUILD_CLANGD; its own component and Debian package
# (metaguard-clangd), installing bin/metaguard-clangd, a name that no file of
# clangd-19 uses.
if(TARGET metaguard-clangd)
  install(TARGETS metaguard-clangd
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT clangd)
endif()
# -----------------------------------------------------------------------------

install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/checks/
  DESTINATION ${CMAKE_INSTALL_DATADIR}/metaguard/checks COMPONENT metaguard)
file(GLOB METAGUARD_EXAMPLE_SOURCES ${PROJECT_SOURCE_DIR}/examples/*.cpp)
install(FILES ${METAGUARD_EXAMPLE_SOURCES}
  DESTINATION ${CMAKE_INSTALL_DATADIR}/metaguard/examples COMPONENT metaguard)
# The models the examples include (minilm_embeddings.cpp: models/bert.h).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/models
  DESTINATION ${CMAKE_INSTALL_DATADIR}/metaguard/examples COMPONENT metaguard)
install(FILES ${PROJECT_SOURCE_DIR}/cmake/ExamplesStandalone.cmake
  DESTINATION ${CMAKE_INSTALL_DATADIR}/metaguard/examples RENAME CMakeLists.txt
  COMPONENT metaguard)
install(FILES ${PROJECT_SOURCE_DIR}/README.md
  DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT metaguard)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/
  DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT metaguard)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/metaguardConfig.cmake.in
  ${PROJECT_BINARY_DIR}/metaguardConfig.cmake
  INSTALL_DESTINATION ${METAGUARD_INSTALL_CMAKEDIR}
  PATH_VARS METAGUARD_INSTALL_PLUGINDIR CMAKE_INSTALL_BINDIR)
# metaguard's own rule, not one of write_basic_package_version_file's: it
# also accepts requests for the minor release before (the template says why).
configure_file(${PROJECT_SOURCE_DIR}/cmake/metaguardConfigVersion.cmake.in
  ${PROJECT_BINARY_DIR}/metaguardConfigVersion.cmake @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/metaguardConfig.cmake
  ${PROJECT_BINARY_DIR}/metaguardConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/MetaguardFindTorch.cmake
  DESTINATION ${METAGUARD_INSTALL_CMAKEDIR} COMPONENT metaguard)
