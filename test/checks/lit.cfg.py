# lit configuration for the clang-tidy check tests (test/checks).
import os
import re

import lit.formats

config.name = "metaguard-checks"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".cpp", ".test"]
config.excludes = ["Inputs", "check_clang_tidy.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.metaguard_obj_root, "test", "checks")

# The LLVM major of the clang-tidy under test. A case that a major cannot
# support says so with `UNSUPPORTED: llvm-14` or `REQUIRES: llvm-at-least-16`,
# and why, in a comment beside it.
config.available_features.add("llvm-%d" % config.llvm_major)
for major in range(14, config.llvm_major + 1):
    config.available_features.add("llvm-at-least-%d" % major)

config.environment["PATH"] = os.pathsep.join(
    [config.filecheck_dir, config.environment.get("PATH", os.environ.get("PATH", ""))])

# /usr/include is already a system directory: passing it again with -isystem
# reorders it before libstdc++'s and breaks #include_next <stdlib.h>.
def torch_include_flags(include_dirs):
    return " ".join("-isystem " + d for d in include_dirs
                    if os.path.normpath(d) not in ("/usr/include", "/usr/local/include"))


def torch_std_flag(include_dirs):
    """The C++ standard a LibTorch header set needs: 2.x's headers are
    written for C++20 (its TorchConfig.cmake asks for it), 1.13's for C++17."""
    for d in include_dirs:
        for version_h in ("torch/headeronly/version.h", "torch/version.h",
                          "torch/csrc/api/include/torch/version.h"):
            path = os.path.join(d, version_h)
            if os.path.isfile(path):
                with open(path) as f:
                    major = re.search(r"#define TORCH_VERSION_MAJOR (\d+)", f.read())
                if major:
                    return "-std=c++20" if int(major.group(1)) >= 2 else "-std=c++17"
    return "-std=c++17"


def libtorch_prefix_includes(prefix):
    """A LibTorch folder's include directories (an unpacked libtorch archive,
    or a PyTorch wheel's `torch` folder)."""
    return [os.path.join(prefix, "include"),
            os.path.join(prefix, "include", "torch", "csrc", "api", "include")]


torch_includes = [d for d in config.torch_include_dirs.split(";") if d]
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
config.substitutions.append(("%llvm_major", str(config.llvm_major)))
config.substitutions.append(
    ("%flat_config", config.python_executable + " " +
     os.path.join(config.test_source_root, "Inputs", "flat-config.py")))
config.substitutions.append(("%plugin", config.metaguard_plugin))
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%runtime_include", runtime_include))
config.substitutions.append(("%torch_includes", torch_include_flags(torch_includes)))
config.substitutions.append(("%torch_std", torch_std_flag(torch_includes)))

have_runtime_headers = os.path.exists(os.path.join(runtime_include, "metaguard", "metaguard.h"))
# `lit -D real_headers=0` leaves out the cases on LibTorch's real headers (the
# slowest ones), e.g. for a quick run on a further LLVM major.
real_headers_wanted = lit_config.params.get("real_headers", "1") != "0"
if torch_includes and have_runtime_headers and real_headers_wanted:
    config.available_features.add("real-headers")

# A second LibTorch for the real-header tests (*-second-libtorch.test): the
# `torch2` lit parameter (lit -D torch2=<dir>) or CMake's
# METAGUARD_CHECK_SECOND_TORCH, either a LibTorch folder with include/ in it
# (a PyTorch wheel's `torch` folder, an unpacked libtorch archive).
# Without one those tests are UNSUPPORTED.
second_torch = lit_config.params.get("torch2", config.second_torch_dir)
if second_torch and not os.path.isfile(os.path.join(second_torch, "include", "torch", "csrc",
                                                    "api", "include", "torch", "torch.h")):
    lit_config.fatal("torch2=%s is not a LibTorch folder (no include/torch/csrc/api/include/"
                     "torch/torch.h in it); give the folder that holds include/ and lib/, "
                     "e.g. python -c 'import torch, os; print(os.path.dirname(torch.__file__))'"
                     % second_torch)
second_torch_includes = libtorch_prefix_includes(second_torch) if second_torch else []
config.substitutions.append(("%torch2_includes", torch_include_flags(second_torch_includes)))
config.substitutions.append(("%torch2_std", torch_std_flag(second_torch_includes)))
if second_torch and have_runtime_headers and real_headers_wanted:
    config.available_features.add("real-headers-second-libtorch")
