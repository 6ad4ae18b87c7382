#!/usr/bin/env python3
"""Writes a small project for metaguard-clangd into the folder argv[1].

src/model.cpp has one metaguard finding (from_pretrained inside
init_empty_weights, line 9); the project has the configuration a user
normally has: a compile database, a .clang-tidy enabling metaguard-* and a
.clangd (--warnings-as-errors: .clang-tidy also makes metaguard's findings
errors; --headers: also src/composite.cpp, whose loads go through code in
src/helpers.h and in the mock headers; --empty-model: also src/skeleton.cpp,
whose empty model is used before its weights, line 15). The headers are the check tests' mocks of metaguard and LibTorch
(test/checks/Inputs), so clangd parses the file in about a second.
"""
import json
import os
import sys

root = os.path.abspath(sys.argv[1])
mocks = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "checks", "Inputs"))
os.makedirs(os.path.join(root, "src"), exist_ok=True)
os.makedirs(os.path.join(root, "build"), exist_ok=True)
files = {
    "src/model.cpp": """#include <metaguard/metaguard.h>

struct EncoderImpl : torch::nn::Module {
  explicit EncoderImpl(const metaguard::Config &);
};
TORCH_MODULE(Encoder);

void build(const std::filesystem::path &dir) {
  auto guard = metaguard::init_empty_weights();
  auto encoder = metaguard::from_pretrained<Encoder>(dir);
}

void offload(Encoder model, const metaguard::DeviceMap &map) {
  metaguard::dispatch_model(*model, map, "offload");
}
""",
    ".clang-tidy": "Checks: '-*,metaguard-*'\n" + (
        # clangd --check lists errors only.
        "WarningsAsErrors: 'metaguard-*'\n" if "--warnings-as-errors" in sys.argv else ""),
    # No FastCheckFilter here: metaguard-clangd must run the checks with
    # clangd's default (Strict).
    ".clangd": "Diagnostics:\n  UnusedIncludes: None\n",
}
if "--empty-model" in sys.argv:
    files["src/skeleton.cpp"] = """#include <metaguard/metaguard.h>

struct EncoderImpl : torch::nn::Module {
  explicit EncoderImpl(const metaguard::Config &);
  torch::Tensor forward(torch::Tensor x);
};
TORCH_MODULE(Encoder);

void run(const metaguard::Config &config, torch::Tensor x) {
  Encoder skeleton{nullptr};
  {
    auto guard = metaguard::init_empty_weights();
    skeleton = metaguard::from_config<Encoder>(config);
  }
  skeleton->forward(x);
}
"""
if "--headers" in sys.argv:
    # Loads reached through code in a header, which clangd keeps in its
    # preamble without function bodies (see clangd-preamble.test).
    files["src/helpers.h"] = """#pragma once
#include <metaguard/metaguard.h>
#include <memory>

struct EncoderImpl : torch::nn::Module {
  explicit EncoderImpl(const metaguard::Config &);
};
TORCH_MODULE(Encoder);

inline Encoder loadEncoder(const std::filesystem::path &dir) {
  return metaguard::from_pretrained<Encoder>(dir);
}
"""
    files["src/composite.cpp"] = """#include "helpers.h"

struct CompositeImpl : torch::nn::Module {
  explicit CompositeImpl(const metaguard::Config &) {
    encoder = metaguard::from_pretrained<Encoder>("encoder");
  }
  Encoder encoder{nullptr};
};
TORCH_MODULE(Composite);

void throughHolder(const metaguard::Config &config) {
  auto guard = metaguard::init_empty_weights();
  Composite model(config);
}

void throughMakeShared(const metaguard::Config &config) {
  auto guard = metaguard::init_empty_weights();
  auto model = std::make_shared<CompositeImpl>(config);
}

void throughInlineHelper(const std::filesystem::path &dir) {
  auto guard = metaguard::init_empty_weights();
  auto encoder = loadEncoder(dir);
}
"""
for name, text in files.items():
    with open(os.path.join(root, name), "w", encoding="utf-8") as handle:
        handle.write(text)
source = os.path.join(root, "src", "model.cpp")
database = [{"directory": os.path.join(root, "build"), "file": os.path.join(root, name),
             "arguments": ["c++", "-std=c++17", "-I", mocks, "-c", os.path.join(root, name)]}
            for name in files if name.endswith(".cpp")]
with open(os.path.join(root, "build", "compile_commands.json"), "w", encoding="utf-8") as handle:
    json.dump(database, handle)
