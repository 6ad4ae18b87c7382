# metaguard_auto_option(NAME HELP AVAILABLE): an option that is ON, OFF or
# AUTO (the default); sets NAME_ENABLED to ON when it is ON, or AUTO and
# AVAILABLE. AUTO is decided again at every configure, so a build folder
# first configured before the packages were installed (the main job's, then
# the test command's) builds the part once they are, which a cached
# option() would not.
function(metaguard_auto_option name help available)
  # A BOOL in the cache is what option() left there when it decided alone.
  get_property(type CACHE ${name} PROPERTY TYPE)
  if(type STREQUAL "BOOL")
    unset(${name} CACHE)
  endif()
  set(${name} AUTO CACHE STRING "${help}")
  set_property(CACHE ${name} PROPERTY STRINGS AUTO ON OFF)
  if(${name} STREQUAL "AUTO")
    set(enabled ${available})
  elseif(${name})
    set(enabled ON)
  else()
    set(enabled OFF)
  endif()
  set(${name}_ENABLED ${enabled} PARENT_SCOPE)
endfunction()
