# Compiling a target's files in batches (CMake's unity build): most of each
# file's compile time is spent instantiating the same templates (Clang's AST
# and matchers for the checks, LibTorch's for the runtime), which a batch does
# once. `files_per_batch` sets how an edit trades against a cold build: an
# edit recompiles its whole batch. METAGUARD_UNITY_BUILD=OFF compiles each
# file alone, for working on one file. Files of a target share one translation
# unit per batch, so names private to a file (anonymous namespaces) must be
# unique across the target.
function(metaguard_compile_in_batches target files_per_batch)
  set_target_properties(${target} PROPERTIES
    UNITY_BUILD ${METAGUARD_UNITY_BUILD}
    UNITY_BUILD_BATCH_SIZE ${files_per_batch})
endfunction()
