#!/usr/bin/env python3
"""Writes a CMake project whose to_empty mistakes span files into argv[1],
compiled against the check tests' mock headers (argv[2]), and configures it
with CMAKE_EXPORT_COMPILE_COMMANDS into argv[1]/build.
  materialise.cpp  materialise(net): to_empty without initialising
  initialise.cpp   initialise(net): normal_ over its parameters()
  prepare.cpp      prepare(net): to_empty, then reset_parameters()
  factory.cpp      make_materialised(config): built empty, to_empty, returned
  use.cpp          materialise() then forward                    -> line 4
                   make_materialised() then save_pretrained      -> line 8
                   materialise(), initialise(), forward           (fine)
                   prepare() then forward                         (fine)
Every finding needs another file's summary.
"""
import os
import sys

from mock_project import write_project

root, mocks = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
sources = {
    "materialise.cpp": """#include "app.h"
void materialise(Net &net) {
  metaguard::to_empty(*net, torch::kCPU);
}
""",
    "initialise.cpp": """#include "app.h"
void initialise(Net &net) {
  for (auto &p : net->parameters())
    torch::nn::init::normal_(p);
}
""",
    "prepare.cpp": """#include "app.h"
void prepare(Net &net) {
  metaguard::to_empty(*net, torch::kCPU);
  net->reset_parameters();
}
""",
    "factory.cpp": """#include "app.h"
Net make_materialised(const metaguard::Config &config) {
  auto net = metaguard::with_meta_device([&] { return Net(config); });
  metaguard::to_empty(*net, torch::kCPU);
  return net;
}
""",
    "use.cpp": """#include "app.h"
void forgot(const metaguard::Config &config, torch::Tensor x) {
  auto net = metaguard::with_meta_device([&] { return Net(config); });
  materialise(net);
  net->forward(x);
}
void saved(const metaguard::Config &config, const std::filesystem::path &out) {
  Net net = make_materialised(config);
  metaguard::save_pretrained(*net, out);
}
void initialised(const metaguard::Config &config, torch::Tensor x) {
  auto net = metaguard::with_meta_device([&] { return Net(config); });
  materialise(net);
  initialise(net);
  net->forward(x);
}
void prepared(const metaguard::Config &config, torch::Tensor x) {
  auto net = metaguard::with_meta_device([&] { return Net(config); });
  prepare(net);
  net->forward(x);
}
""",
}
header = """#pragma once
#include <metaguard/metaguard.h>
struct NetImpl : torch::nn::Module {
  explicit NetImpl(const metaguard::Config &);
  torch::Tensor forward(torch::Tensor x);
  void reset_parameters();
};
TORCH_MODULE(Net);
void materialise(Net &net);
void initialise(Net &net);
void prepare(Net &net);
Net make_materialised(const metaguard::Config &config);
"""
write_project(root, mocks, "to_empty", "app.h", header, sources)
