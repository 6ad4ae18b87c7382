# Reads checks/Checks.def, the one list of metaguard's checks, for CMake:
#   metaguard_check_list(<sources_var> <include_dir_var>)
# sets <sources_var> to every .cpp of each entry's folder, checks/<name
# without metaguard->/ (which must hold <ClassName>.h and .cpp), and
# <include_dir_var> to a folder holding MetaguardCheckHeaders.inc, the
# #include of each <folder>/<ClassName>.h, for MetaguardModule.cpp. The C++
# code reads the same file with the preprocessor; this reads it line by line,
# so an entry written any other way stops the configuration instead of being
# compiled but not registered, or the reverse.
function(metaguard_check_list sources_var include_dir_var)
  set(dir ${PROJECT_SOURCE_DIR}/checks)
  set(list_file ${dir}/Checks.def)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${list_file})
  file(STRINGS ${list_file} lines REGEX "^[ \t]*METAGUARD_CHECK[ \t]*\\(")
  set(sources "")
  set(includes "")
  set(names "")
  foreach(line IN LISTS lines)
    if(NOT line MATCHES "^METAGUARD_CHECK\\(([A-Za-z_][A-Za-z0-9_]*), \"(metaguard-[a-z0-9-]+)\"\\)$")
      message(FATAL_ERROR "${list_file}: cannot read '${line}': write each check on "
        "one line as METAGUARD_CHECK(ClassName, \"metaguard-name\")")
    endif()
    set(class ${CMAKE_MATCH_1})
    set(name ${CMAKE_MATCH_2})
    if(name IN_LIST names)
      message(FATAL_ERROR "${list_file}: ${name} is listed twice")
    endif()
    list(APPEND names ${name})
    string(REGEX REPLACE "^metaguard-" "" folder ${name})
    foreach(ext h cpp)
      if(NOT EXISTS ${dir}/${folder}/${class}.${ext})
        message(FATAL_ERROR "${list_file}: ${name} is checks/${folder}/${class}, but there "
          "is no checks/${folder}/${class}.${ext}")
      endif()
    endforeach()
    # The folder's every .cpp: a check's finder, reporter and the rest need
    # no list of their own.
    file(GLOB check_sources CONFIGURE_DEPENDS ${dir}/${folder}/*.cpp)
    list(SORT check_sources)
    list(APPEND sources ${check_sources})
    string(APPEND includes "#include \"${folder}/${class}.h\"\n")
  endforeach()
  if(NOT names)
    message(FATAL_ERROR "${list_file}: no METAGUARD_CHECK entry found")
  endif()
  set(include_dir ${CMAKE_CURRENT_BINARY_DIR}/generated)
  # Rewritten only when the list changes, so a reconfigure rebuilds nothing.
  file(CONFIGURE OUTPUT ${include_dir}/MetaguardCheckHeaders.inc
    CONTENT "// Generated from checks/Checks.def by cmake/MetaguardCheckList.cmake.\n${includes}"
    @ONLY)
  set(${sources_var} ${sources} PARENT_SCOPE)
  set(${include_dir_var} ${include_dir} PARENT_SCOPE)
endfunction()
