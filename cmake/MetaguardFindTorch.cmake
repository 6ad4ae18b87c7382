# metaguard_find_torch([hint dirs...]): finds LibTorch the way
# find_package(Torch) does and leaves what it leaves: the imported target
# `torch`, TORCH_LIBRARIES, TORCH_INCLUDE_DIRS and Torch_VERSION, and
# METAGUARD_TORCH_CONFIG_DIR (the folder of the TorchConfig.cmake used). The
# hint dirs are searched after Torch_DIR and CMAKE_PREFIX_PATH.
#
# Which LibTorch: the usual find_package() rules, so Torch_DIR or
# CMAKE_PREFIX_PATH choose it: an unpacked libtorch archive, the `torch`
# folder of a PyTorch wheel (python -c 'import torch.utils;
# print(torch.utils.cmake_prefix_path)'), or Debian's libtorch-dev.
#
# Why not always find_package(Torch): the LibTorch inside a CUDA build of the
# PyTorch wheel ships a TorchConfig.cmake that requires a CUDA toolkit (nvcc
# and the CUDA headers) and stops the configure without one, even for
# programs that never use a GPU. The runtime needs only LibTorch's CPU
# libraries, so for a CUDA LibTorch on a machine with no toolkit we import
# libtorch_cpu and libc10 from the same prefix ourselves.
# METAGUARD_TORCH_CPU_ONLY: AUTO (that rule), ON (always), OFF (never).
# Installed beside metaguardConfig.cmake, so find_package(metaguard) in a
# downstream project finds LibTorch by the same rule.
include_guard(GLOBAL)

set(METAGUARD_TORCH_CPU_ONLY AUTO CACHE STRING
  "Link only LibTorch's CPU libraries: AUTO (when a CUDA LibTorch meets no CUDA toolkit), ON, OFF")
set_property(CACHE METAGUARD_TORCH_CPU_ONLY PROPERTY STRINGS AUTO ON OFF)

# Whether the LibTorch whose TorchConfig.cmake is in `config_dir` needs a CUDA
# toolkit this machine lacks.
function(metaguard_torch_lacks_cuda_toolkit config_dir out)
  set(${out} FALSE PARENT_SCOPE)
  file(STRINGS "${config_dir}/../Caffe2/Caffe2Config.cmake" uses_cuda
    REGEX "set\\(CAFFE2_USE_CUDA (1|ON)\\)")
  if(NOT uses_cuda)
    return()
  endif()
  find_program(nvcc NAMES nvcc NO_CACHE
    HINTS ${CUDA_TOOLKIT_ROOT_DIR} ${CUDAToolkit_ROOT} $ENV{CUDA_HOME} $ENV{CUDA_PATH} /usr/local/cuda
    PATH_SUFFIXES bin)
  if(NOT nvcc)
    set(${out} TRUE PARENT_SCOPE)
  endif()
endfunction()

# The CPU half of the LibTorch whose TorchConfig.cmake is in `config_dir`,
# under the names find_package(Torch) gives.
macro(metaguard_import_torch_cpu config_dir)
  # TorchConfig.cmake computes its prefix the same way.
  get_filename_component(metaguard_torch_prefix "${config_dir}/../../.." ABSOLUTE)
  foreach(metaguard_lib IN ITEMS c10 torch_cpu)
    find_library(metaguard_${metaguard_lib}_path ${metaguard_lib} NO_CACHE NO_DEFAULT_PATH
      PATHS "${metaguard_torch_prefix}/lib")
    if(NOT metaguard_${metaguard_lib}_path)
      message(FATAL_ERROR "metaguard: no lib${metaguard_lib}.so in ${metaguard_torch_prefix}/lib, "
        "the LibTorch of ${config_dir}; point Torch_DIR or CMAKE_PREFIX_PATH at a complete LibTorch")
    endif()
    add_library(metaguard_torch_${metaguard_lib} SHARED IMPORTED)
    set_target_properties(metaguard_torch_${metaguard_lib} PROPERTIES
      IMPORTED_LOCATION "${metaguard_${metaguard_lib}_path}")
  endforeach()
  set(TORCH_INCLUDE_DIRS "${metaguard_torch_prefix}/include"
    "${metaguard_torch_prefix}/include/torch/csrc/api/include")
  add_library(torch INTERFACE IMPORTED)
  set_target_properties(torch PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${TORCH_INCLUDE_DIRS}"
    INTERFACE_LINK_LIBRARIES "metaguard_torch_torch_cpu;metaguard_torch_c10")
  # The C++ standard its headers need, as its own config would ask for it.
  file(STRINGS "${config_dir}/TorchConfig.cmake" metaguard_torch_std REGEX "cxx_std_[0-9]+")
  string(REGEX MATCH "cxx_std_[0-9]+" metaguard_torch_std "${metaguard_torch_std}")
  if(metaguard_torch_std)
    set_property(TARGET torch PROPERTY INTERFACE_COMPILE_FEATURES ${metaguard_torch_std})
  endif()
  include("${config_dir}/TorchConfigVersion.cmake")
  set(Torch_VERSION "${PACKAGE_VERSION}")
  set(Torch_FOUND TRUE)
  set(TORCH_LIBRARIES torch)
  message(STATUS "metaguard: LibTorch ${Torch_VERSION} in ${metaguard_torch_prefix} is a CUDA build "
    "and there is no CUDA toolkit: linking its CPU libraries only (METAGUARD_TORCH_CPU_ONLY)")
endmacro()

macro(metaguard_find_torch)
  # Where find_package(Torch) would look, without running its config yet:
  # Torch_DIR first, then the prefixes.
  if(Torch_DIR AND EXISTS "${Torch_DIR}/TorchConfig.cmake")
    set(metaguard_torch_config_dir "${Torch_DIR}")
  else()
    find_path(metaguard_torch_config_dir TorchConfig.cmake NO_CACHE
      HINTS ${ARGN}
      PATH_SUFFIXES Torch share/cmake/Torch lib/cmake/Torch lib/${CMAKE_LIBRARY_ARCHITECTURE}/cmake/Torch)
  endif()
  set(metaguard_torch_cpu_only FALSE)
  if(metaguard_torch_config_dir AND METAGUARD_TORCH_CPU_ONLY STREQUAL "ON")
    set(metaguard_torch_cpu_only TRUE)
  elseif(metaguard_torch_config_dir AND METAGUARD_TORCH_CPU_ONLY STREQUAL "AUTO")
    metaguard_torch_lacks_cuda_toolkit("${metaguard_torch_config_dir}" metaguard_torch_cpu_only)
  endif()
  if(metaguard_torch_cpu_only)
    metaguard_import_torch_cpu("${metaguard_torch_config_dir}")
    set(METAGUARD_TORCH_CONFIG_DIR "${metaguard_torch_config_dir}")
  else()
    find_package(Torch REQUIRED HINTS ${ARGN})
    set(METAGUARD_TORCH_CONFIG_DIR "${Torch_DIR}")
  endif()
endmacro()
