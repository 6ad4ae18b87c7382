# Parsing LibTorch's headers dominates build time, so executables that use the
# runtime reuse the library's precompiled header. GCC only accepts a PCH built
# with the same code model: the library is -fPIC, so the executable's own
# objects must be -fPIC too (PIE executables link -fPIC objects fine).
function(metaguard_reuse_torch_pch target)
  target_compile_options(${target} PRIVATE -fPIC)
  target_precompile_headers(${target} REUSE_FROM metaguard)
endfunction()
