# Debian packages with CPack:  cpack -G DEB   (in the build folder, after a build)
#   metaguard_<version>_<arch>.deb         plugin, driver, runtime, headers, CMake
#                                          package, docs and examples (/usr)
#   metaguard-clangd_<version>_<arch>.deb  only when metaguard-clangd was built;
#                                          bin/metaguard-clangd, no clash with clangd-N
#   metaguard-clang-tidy_<version>_<arch>.deb  only when metaguard-clang-tidy was
#                                          built; bin/metaguard-clang-tidy
set(CPACK_PACKAGE_NAME metaguard)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "metaguard")
set(CPACK_PACKAGE_CONTACT "metaguard maintainers <metaguard@invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "clang-tidy checks and a LibTorch runtime against meta-device and offloading bugs")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)

set(CPACK_DEBIAN_METAGUARD_PACKAGE_NAME metaguard)
# The plugins load into Debian's clang-tidy of their majors (any one of them
# will do); the driver is Python; the runtime's headers and CMake package need
# LibTorch and nlohmann/json, and the main job configures the bundled examples
# with CMake.
set(metaguard_deb_tidy "clang-tidy-${METAGUARD_LLVM_VERSION}")
foreach(major IN LISTS METAGUARD_EXTRA_LLVM_VERSIONS)
  if(NOT major STREQUAL METAGUARD_LLVM_VERSION)
    string(APPEND metaguard_deb_tidy " | clang-tidy-${major}")
  endif()
endforeach()
set(METAGUARD_DEB_DEPENDS "${metaguard_deb_tidy}, python3, libtorch-dev, nlohmann-json3-dev, cmake")
set(CPACK_DEBIAN_METAGUARD_PACKAGE_DEPENDS "${METAGUARD_DEB_DEPENDS}")
# With a single component CPack builds one monolithic package, which reads
# the package-wide variable instead.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "${METAGUARD_DEB_DEPENDS}")

set(CPACK_DEBIAN_CLANGD_PACKAGE_NAME metaguard-clangd)
set(CPACK_DEBIAN_CLANGD_PACKAGE_SHLIBDEPS ON)
# Not the package-wide list above: dpkg-shlibdeps adds its libraries.
set(CPACK_DEBIAN_CLANGD_PACKAGE_DEPENDS "libc6")
set(CPACK_COMPONENT_CLANGD_DESCRIPTION "clangd with metaguard's checks built in")

set(CPACK_DEBIAN_CLANG_TIDY_PACKAGE_NAME metaguard-clang-tidy)
set(CPACK_DEBIAN_CLANG_TIDY_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_CLANG_TIDY_PACKAGE_DEPENDS "libc6")
set(CPACK_COMPONENT_CLANG_TIDY_DESCRIPTION
  "clang-tidy with metaguard's checks built in, linked statically against LLVM and Clang")

include(CPack)
