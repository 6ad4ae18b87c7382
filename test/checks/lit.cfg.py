# lit configuration for the clang-tidy check tests (test/checks).
import os

import lit.formats

config.name = "metaguard-checks"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".cpp", ".test"]
config.excludes = ["Inputs", "check_clang_tidy.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.metaguard_obj_root, "test", "checks")

config.environment["PATH"] = os.pathsep.join(
    [config.filecheck_dir, config.environment.get("PATH", os.environ.get("PATH", ""))])

# /usr/include is already a system directory: passing it again with -isystem
# reorders it before libstdc++'s and breaks #include_next <stdlib.h>.
torch_includes = [d for d in config.torch_include_dirs.split(";")
                  if d and os.path.normpath(d) not in ("/usr/include", "/usr/local/include")]
runtime_include = os.path.join(config.metaguard_src_root, "runtime", "include")
harness = os.path.join(config.test_source_root, "check_clang_tidy.py")

check_clang_tidy = " ".join([
    config.python_executable, harness,
    "--clang-tidy", config.clang_tidy,
    "--plugin", config.metaguard_plugin,
    "--filecheck-dir", config.filecheck_dir,
    "--mock-include", os.path.join(config.test_source_root, "Inputs"),
])
config.substitutions.append(("%check_clang_tidy", check_clang_tidy))
config.substitutions.append(("%clang_tidy", config.clang_tidy))
config.substitutions.append(("%plugin", config.metaguard_plugin))
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%runtime_include", runtime_include))
config.substitutions.append(
    ("%torch_includes", " ".join("-isystem " + d for d in torch_includes)))

if torch_includes and os.path.exists(os.path.join(runtime_include, "metaguard", "metaguard.h")):
    config.available_features.add("real-headers")
