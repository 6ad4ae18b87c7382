# Plugins for further LLVM majors (METAGUARD_EXTRA_LLVM_VERSIONS, e.g.
# "14;16;22"), beside the one for METAGUARD_LLVM_VERSION. A build holds one
# LLVM's CMake packages at a time, so each further major is a build of its own
# of this source tree, the checks alone (no runtime), in <build>/llvm<N>/: its
# plugin at <build>/llvm<N>/lib/libmetaguard_tidy.so, its metaguard-clangd
# where that major ships clangd's libraries, and its lit suites for the checks
# and the tools (<build>/llvm<N>/test/checks, test/tools). The plugin is copied
# to <build>/lib/libmetaguard_tidy-llvm<N>.so, the name it is installed under.
include(ExternalProject)

set(METAGUARD_EXTRA_PLUGINS "")
foreach(major IN LISTS METAGUARD_EXTRA_LLVM_VERSIONS)
  if(major STREQUAL METAGUARD_LLVM_VERSION)
    continue()
  endif()
  if(NOT major MATCHES "^[0-9]+$" OR major LESS 14 OR major GREATER 22)
    message(FATAL_ERROR "METAGUARD_EXTRA_LLVM_VERSIONS: '${major}' is not an LLVM major "
      "from 14 to 22")
  endif()
  set(dir ${CMAKE_BINARY_DIR}/llvm${major})
  set(plugin ${CMAKE_BINARY_DIR}/lib/libmetaguard_tidy-llvm${major}.so)
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
    # The sources are this tree's: let the sub-build's own Ninja decide what
    # changed, every time.
    BUILD_ALWAYS ON
    INSTALL_COMMAND ${CMAKE_COMMAND} -E copy ${dir}/lib/libmetaguard_tidy.so ${plugin}
    BUILD_BYPRODUCTS ${plugin})
  list(APPEND METAGUARD_EXTRA_PLUGINS ${plugin})
endforeach()
