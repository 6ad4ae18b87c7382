# Installed as share/metaguard/examples/CMakeLists.txt: the examples as a
# project of their own, against the installed metaguard. Configuring it is
# enough to lint them (the main job):
#   cmake -S /usr/share/metaguard/examples -B /tmp/metaguard-examples
#   metaguard-tidy -p /tmp/metaguard-examples /usr/share/metaguard/examples
cmake_minimum_required(VERSION 3.21)
project(metaguard_examples LANGUAGES CXX)
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)
find_package(metaguard CONFIG REQUIRED)

file(GLOB examples CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
foreach(source ${examples})
  get_filename_component(example ${source} NAME_WE)
  add_executable(example_${example} ${source})
  target_link_libraries(example_${example} PRIVATE metaguard::runtime)
endforeach()
