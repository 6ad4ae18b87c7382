#!/usr/bin/env python3
"""Writes a small CMake project whose bugs span translation units into argv[1],
compiled against the check tests' mock headers (argv[2]), and configures it
with CMAKE_EXPORT_COMPILE_COMMANDS into argv[1]/build.

  src/model.h     declarations shared by the files below
  src/loader.cpp  load_encoder(): a from_pretrained call (and loader_detail.h,
                  a header no other file includes)
  src/setter.cpp  enter_meta(): set_default_device("meta")
  src/mover.cpp   move_to_cpu(model): model.to(kCPU)
  src/scope.cpp   load_encoder() under init_empty_weights(), and after
                  enter_meta()                        -> 2 findings, lines 6 and 11
  src/offload.cpp a dispatched model given to move_to_cpu() -> 1 finding, line 6
  src/clean.cpp   calls load_encoder() with no meta state: nothing to find

Each finding needs the summary of a function defined in another file, so a
single-TU run finds none of them.
"""
import os
import subprocess
import sys

root, mocks = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
files = {
    "CMakeLists.txt": f"""cmake_minimum_required(VERSION 3.16)
project(wholeprogram CXX)
set(CMAKE_CXX_STANDARD 17)
add_library(app OBJECT src/loader.cpp src/setter.cpp src/mover.cpp src/scope.cpp
                       src/offload.cpp src/clean.cpp)
target_include_directories(app PRIVATE "{mocks}")
""",
    "src/model.h": """#pragma once
#include <metaguard/metaguard.h>

struct EncoderImpl : torch::nn::Module {
  explicit EncoderImpl(const metaguard::Config &);
};
TORCH_MODULE(Encoder);

Encoder load_encoder(const std::filesystem::path &dir);
void enter_meta();
void move_to_cpu(torch::nn::Module &model);
""",
    "src/loader_detail.h": """#pragma once
constexpr int loader_detail = 1;
""",
    "src/loader.cpp": """#include "model.h"
#include "loader_detail.h"

Encoder load_encoder(const std::filesystem::path &dir) {
  return metaguard::from_pretrained<Encoder>(dir);
}
""",
    "src/setter.cpp": """#include "model.h"

void enter_meta() { metaguard::set_default_device("meta"); }
""",
    "src/mover.cpp": """#include "model.h"

void move_to_cpu(torch::nn::Module &model) { model.to(torch::kCPU); }
""",
    "src/scope.cpp": """#include "model.h"

void build_skeleton(const std::filesystem::path &dir) {
  auto guard = metaguard::init_empty_weights();
  // Loads real weights under the meta scope, through another file.
  auto encoder = load_encoder(dir);
}

void after_setter(const std::filesystem::path &dir) {
  enter_meta();
  auto encoder = load_encoder(dir);
}
""",
    "src/offload.cpp": """#include "model.h"

void offload(torch::nn::Module &model, const metaguard::DeviceMap &map) {
  metaguard::dispatch_model(model, map, "offload");
  // Moves the offloaded parameters off their hooks, in another file.
  move_to_cpu(model);
}
""",
    "src/clean.cpp": """#include "model.h"

Encoder fine(const std::filesystem::path &dir) { return load_encoder(dir); }
""",
}
for name, text in files.items():
    path = os.path.join(root, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
compiler = os.environ.get("CXX_FOR_TESTS", "clang++-19")
subprocess.run(["cmake", "-S", root, "-B", os.path.join(root, "build"), "-G", "Ninja",
                f"-DCMAKE_CXX_COMPILER={compiler}", "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON"],
               check=True, stdout=subprocess.DEVNULL)
