# lit configuration for the command-line driver and metaguard-clangd.
import os

import lit.formats

config.name = "metaguard-tools"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".test"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.metaguard_obj_root, "test", "tools")

config.environment["PATH"] = os.pathsep.join(
    [config.llvm_tools_dir, config.environment.get("PATH", os.environ.get("PATH", ""))])
config.substitutions.append(("%python", config.python_executable))
# The clang-tidy (and its run-clang-tidy) of the major the plugin is built for.
config.substitutions.append(("%clang-tidy", os.path.join(config.llvm_tools_dir, "clang-tidy")))
config.substitutions.append(
    ("%run-clang-tidy", os.path.join(config.llvm_tools_dir, "run-clang-tidy")))
config.available_features.add("llvm-%d" % config.llvm_major)
# clang-apply-replacements of the same major (Debian: clang-tools-N), which the
# driver's --fix uses with parallel jobs and whose input --export-fixes writes.
apply_replacements = os.path.join(config.llvm_tools_dir, "clang-apply-replacements")
if os.access(apply_replacements, os.X_OK):
    config.available_features.add("clang-apply-replacements")
config.substitutions.append(("%clang-apply-replacements", apply_replacements))
for major in range(14, config.llvm_major + 1):
    config.available_features.add("llvm-at-least-%d" % major)
config.substitutions.append(
    ("%metaguard-tidy", f"{config.python_executable} {config.metaguard_src_root}/tools/metaguard-tidy"))
config.substitutions.append(("%plugin", config.metaguard_plugin))
# The headers and compiler of that major, for tests that compile a check's
# source without building the plugin (new-check.test).
config.substitutions.append(
    ("%llvm_include", os.path.join(os.path.dirname(config.llvm_tools_dir), "include")))
config.substitutions.append(("%clangxx", os.path.join(config.llvm_tools_dir, "clang++")))
config.substitutions.append(("%metaguard-src", config.metaguard_src_root))
# lit's shell expands no variables: PATH as the tests see it, to prepend to.
config.substitutions.append(("%path_env", config.environment["PATH"]))
# metaguard-clangd is optional (METAGUARD_BUILD_CLANGD); its tests need it
# configured, and then fail rather than skip if it was not built.
if config.metaguard_clangd:
    config.available_features.add("metaguard-clangd")
    config.substitutions.append(("%metaguard-clangd", config.metaguard_clangd))
if config.metaguard_clang_tidy:
    config.available_features.add("metaguard-clang-tidy")
    config.substitutions.append(("%metaguard-clang-tidy", config.metaguard_clang_tidy))
# The tools users run metaguard through, from the Python test environment
# (tools/python-requirements.txt) when the build has one.
for tool in ("pre-commit", "clangd-tidy", "CodeChecker"):
    if config.python_env_bin and os.path.isfile(os.path.join(config.python_env_bin, tool)):
        config.available_features.add(tool.lower())
        config.substitutions.append(("%" + tool.lower(), os.path.join(config.python_env_bin, tool)))
# The build's own compile database, when it compiles the examples (the
# further majors' builds compile the checks alone).
config.substitutions.append(("%build", config.metaguard_obj_root))
database = os.path.join(config.metaguard_obj_root, "compile_commands.json")
if os.path.isfile(database):
    with open(database, encoding="utf-8") as handle:
        if os.path.join(config.metaguard_src_root, "examples", "") in handle.read():
            config.available_features.add("examples-database")
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "Inputs")))
config.substitutions.append(("%runtime_include", os.path.join(config.metaguard_src_root, "runtime", "include")))
config.substitutions.append(("%mocks", os.path.join(config.metaguard_src_root, "test", "checks", "Inputs")))
config.substitutions.append(
    ("%validate-sarif", f"{config.python_executable} {os.path.join(config.test_source_root, 'Inputs', 'validate-sarif.py')} {config.sarif_multitool}"))
