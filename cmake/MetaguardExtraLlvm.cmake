# Plugins for further LLVM majors (METAGUARD_EXTRA_LLVM_VERSIONS, e.g.
# "14;16;22"), beside the one for METAGUARD_LLVM_VERSION. A build holds one
# LLVM's CMake packages at a time, so each further major is a build of its own
# of this source tree, the checks alone (no runtime), in <build>/llvm<N>/: its
# plugin at <build>/llvm<N>/lib/libmetaguard_tidy.so, its metaguard-clangd
# where that major ships clangd's libraries, and its lit suites for the checks
# and the tools (<build>/llvm<N>/test/checks, test/tools). The plugin is copied
# to <build>/lib/libmetaguard_tidy-llvm<N>.so, the name it is installed under.
#
# A major whose LLVM is not in /usr/lib/llvm-<N> (e.g. one Debian 12 lacks,
# unpacked from another release's packages by tools/llvm-sid.sh) is found
# through METAGUARD_LLVM<N>_ROOT, that major's LLVM folder (holding
# lib/cmake/llvm and include/), and its tests run METAGUARD_LLVM<N>_CLANG_TIDY
# (a clang-tidy of that major, or a program that runs one). Such a tree's
# static libraries are built for its own release's C library and C++ runtime,
# so nothing is linked from them: the plugin only, no metaguard-clangd or
# metaguard-clang-tidy.
include(ExternalProject)

set(METAGUARD_EXTRA_PLUGINS "")
foreach(major IN LISTS METAGUARD_EXTRA_LLVM_VERSIONS)
  if(major STREQUAL METAGUARD_LLVM_VERSION)
    continue()
  endif()
  if(NOT major MATCHES "^[0-9]+$" OR major LESS 14 OR major GREATER 23)
    message(FATAL_ERROR "METAGUARD_EXTRA_LLVM_VERSIONS: '${major}' is not an LLVM major "
      "from 14 to 23")
  endif()
  set(dir ${CMAKE_BINARY_DIR}/llvm${major})
  set(plugin ${CMAKE_BINARY_DIR}/lib/libmetaguard_tidy-llvm${major}.so)
  set(METAGUARD_LLVM${major}_ROOT "" CACHE PATH
    "LLVM ${major}'s folder (lib/cmake/llvm, include/) when not /usr/lib/llvm-${major}")
  set(METAGUARD_LLVM${major}_CLANG_TIDY "" CACHE FILEPATH
    "The clang-tidy ${major} the LLVM ${major} plugin's tests run, when not clang-tidy-${major}")
  set(elsewhere_args "")
  if(METAGUARD_LLVM${major}_ROOT)
    list(APPEND elsewhere_args -DMETAGUARD_LLVM_ROOT=${METAGUARD_LLVM${major}_ROOT}
      -DMETAGUARD_BUILD_CLANGD=OFF -DMETAGUARD_BUILD_CLANG_TIDY=OFF)
  endif()
  if(METAGUARD_LLVM${major}_CLANG_TIDY)
    list(APPEND elsewhere_args -DMETAGUARD_CLANG_TIDY=${METAGUARD_LLVM${major}_CLANG_TIDY})
  endif()
  ExternalProject_Add(metaguard_tidy_llvm${major}
    SOURCE_DIR ${PROJECT_SOURCE_DIR}
    BINARY_DIR ${dir}
    CMAKE_ARGS
      -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE}
      -DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER}
      -DMETAGUARD_LLVM_VERSION=${major}
      -DMETAGUARD_UNITY_BUILD=${METAGUARD_UNITY_BUILD}
      -DMETAGUARD_BUILD_RUNTIME=OFF
      -DMETAGUARD_BUILD_EXAMPLES=OFF
      -DMETAGUARD_BUILD_BENCH=OFF
      -DMETAGUARD_INSTALL=OFF
      -DMETAGUARD_BUILD_TESTS=${METAGUARD_BUILD_TESTS}
      # The tools' SARIF tests use the validator the main build installed.
      -DMETAGUARD_SARIF_MULTITOOL=${CMAKE_BINARY_DIR}/sarif-multitool/node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool
      ${elsewhere_args}
    # The sources are this tree's: let the sub-build's own Ninja decide what
    # changed, every time.
    BUILD_ALWAYS ON
    INSTALL_COMMAND ${CMAKE_COMMAND} -E copy ${dir}/lib/libmetaguard_tidy.so ${plugin}
    BUILD_BYPRODUCTS ${plugin})
  list(APPEND METAGUARD_EXTRA_PLUGINS ${plugin})
endforeach()
