# Torch and nlohmann_json for the runtime.
#
# Found in metaguard's top directory, not in runtime/: imported targets are
# directory-scoped and the tests and benchmarks link them too. A parent project
# that found them already shares its targets with us (they are visible in
# subdirectories); finding them again would redefine them.
if(NOT TARGET torch)
  # Debian's LibTorch, or the one Torch_DIR / CMAKE_PREFIX_PATH name (see
  # MetaguardFindTorch.cmake for CUDA builds without a CUDA toolkit).
  include(${CMAKE_CURRENT_LIST_DIR}/MetaguardFindTorch.cmake)
  metaguard_find_torch()
endif()
if(Torch_VERSION)
  message(STATUS "metaguard: LibTorch ${Torch_VERSION}")
endif()
if(NOT TARGET nlohmann_json::nlohmann_json)
  find_package(nlohmann_json 3.2 REQUIRED)
endif()

if(NOT PROJECT_IS_TOP_LEVEL)
  # metaguard::runtime's usage requirements name Torch's imported targets; a
  # parent that links it without having found Torch itself must see them too.
  get_directory_property(metaguard_imported_targets IMPORTED_TARGETS)
  foreach(target IN LISTS metaguard_imported_targets)
    get_target_property(metaguard_is_global ${target} IMPORTED_GLOBAL)
    if(NOT metaguard_is_global)
      set_target_properties(${target} PROPERTIES IMPORTED_GLOBAL TRUE)
    endif()
  endforeach()
endif()
