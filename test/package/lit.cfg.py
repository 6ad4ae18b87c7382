# lit configuration for the packaging tests: cmake --install, a downstream
# find_package() project, add_subdirectory(), and the CPack .deb. They use
# the already-built tree (they install it, they do not rebuild metaguard),
# except add-subdirectory.test, which builds the runtime once more.
import os

import lit.formats

config.name = "metaguard-package"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".test"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.metaguard_obj_root, "test", "package")

config.environment["PATH"] = os.pathsep.join(
    [config.llvm_tools_dir, config.environment.get("PATH", os.environ.get("PATH", ""))])
# Rebuilds share the developer's compiler cache when there is one.
for name, value in os.environ.items():
    if name.startswith("CCACHE_") or name.endswith("_COMPILER_LAUNCHER"):
        config.environment[name] = value
for name in ("HOME", "TMPDIR"):
    if name in os.environ:
        config.environment[name] = os.environ[name]

config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%cmake", config.cmake))
config.substitutions.append(("%cpack", config.cpack))
config.substitutions.append(("%build", config.metaguard_obj_root))
config.substitutions.append(("%src", config.metaguard_src_root))
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "Inputs")))
# The LibTorch this build uses (Debian's 1.13 or another, e.g. a PyTorch
# wheel's 2.x): projects configured by the tests get the same one.
config.substitutions.append(("%torch_dir", "-DTorch_DIR=" + config.torch_config_dir))
config.substitutions.append(("%torch_version", config.torch_version))
# metaguard's version (CMakeLists.txt): every artefact must report this one.
config.substitutions.append(("%version", config.metaguard_version))
if config.tidy_plugin_built.upper() in ("ON", "TRUE", "1", "YES"):
    config.available_features.add("tidy-plugin")
# Plugins for further LLVM majors (METAGUARD_EXTRA_LLVM_VERSIONS).
if config.tidy_plugin_built.upper() in ("ON", "TRUE", "1", "YES") and config.extra_llvm_majors:
    config.available_features.add("extra-llvm-majors")
config.substitutions.append(("%extra_majors", '"%s"' % config.extra_llvm_majors))
# The wheel of tools/build-wheel.sh, when run-tests.sh has built it.
import glob
if glob.glob(os.path.join(config.metaguard_obj_root, "dist", "metaguard-*.whl")):
    config.available_features.add("wheel")
