#!/usr/bin/env python3
"""Writes a CMake project whose bugs span chains of files into argv[1],
compiled against the check tests' mock headers (argv[2]), and configures it
with CMAKE_EXPORT_COMPILE_COMMANDS into argv[1]/build.
  load_a.cpp -> load_b.cpp -> load_c.cpp   load_c() calls load_b() calls
                                          load_a(), which calls from_pretrained
  meta_1.cpp -> meta_2.cpp                meta_2() calls meta_1(), which sets
                                          the default device to meta
  move_1.cpp -> move_2.cpp                move_2(model) calls move_1(model),
                                          which moves it
  ping.cpp <-> pong.cpp                   two functions calling each other,
                                          one of them loading
  use.cpp     load_c() under init_empty_weights()            -> line 4
              load_c() after meta_2()                         -> line 8
              a dispatched model given to move_2()            -> line 12
              ping() under init_empty_weights()               -> line 16
Every finding needs a summary that takes in another file's summary.
"""
import os
import sys

from mock_project import write_project

root, mocks = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
sources = {
    "load_a.cpp": """#include "chain.h"
Encoder load_a(const std::filesystem::path &dir) {
  return metaguard::from_pretrained<Encoder>(dir);
}
""",
    "load_b.cpp": """#include "chain.h"
Encoder load_b(const std::filesystem::path &dir) { return load_a(dir); }
""",
    "load_c.cpp": """#include "chain.h"
Encoder load_c(const std::filesystem::path &dir) { return load_b(dir); }
""",
    "meta_1.cpp": """#include "chain.h"
void meta_1() { metaguard::set_default_device("meta"); }
""",
    "meta_2.cpp": """#include "chain.h"
void meta_2() { meta_1(); }
""",
    "move_1.cpp": """#include "chain.h"
void move_1(torch::nn::Module &model) { model.to(torch::kCPU); }
""",
    "move_2.cpp": """#include "chain.h"
void move_2(torch::nn::Module &model) { move_1(model); }
""",
    "ping.cpp": """#include "chain.h"
Encoder ping(const std::filesystem::path &dir, int n) {
  return n > 0 ? pong(dir, n - 1) : metaguard::from_pretrained<Encoder>(dir);
}
""",
    "pong.cpp": """#include "chain.h"
Encoder pong(const std::filesystem::path &dir, int n) { return ping(dir, n); }
""",
    "use.cpp": """#include "chain.h"
void under_scope(const std::filesystem::path &dir) {
  auto guard = metaguard::init_empty_weights();
  auto encoder = load_c(dir);
}
void after_setter(const std::filesystem::path &dir) {
  meta_2();
  auto encoder = load_c(dir);
}
void offload(torch::nn::Module &model, const metaguard::DeviceMap &map) {
  metaguard::dispatch_model(model, map, "offload");
  move_2(model);
}
void cycle(const std::filesystem::path &dir) {
  auto guard = metaguard::init_empty_weights();
  auto encoder = ping(dir, 3);
}
""",
}
header = """#pragma once
#include <metaguard/metaguard.h>
struct EncoderImpl : torch::nn::Module {
  explicit EncoderImpl(const metaguard::Config &);
};
TORCH_MODULE(Encoder);
Encoder load_a(const std::filesystem::path &dir);
Encoder load_b(const std::filesystem::path &dir);
Encoder load_c(const std::filesystem::path &dir);
void meta_1();
void meta_2();
void move_1(torch::nn::Module &model);
void move_2(torch::nn::Module &model);
Encoder ping(const std::filesystem::path &dir, int n);
Encoder pong(const std::filesystem::path &dir, int n);
"""
write_project(root, mocks, "chains", "chain.h", header, sources)
