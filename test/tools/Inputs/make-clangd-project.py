#!/usr/bin/env python3
"""Writes a small project for metaguard-clangd into the folder argv[1].

src/model.cpp has one metaguard finding (from_pretrained inside
init_empty_weights, line 9); the project has the configuration a user
normally has: a compile database, a .clang-tidy enabling metaguard-* and a
.clangd (--warnings-as-errors: .clang-tidy also makes metaguard's findings
errors). The headers are the check tests' mocks of metaguard and LibTorch
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
for name, text in files.items():
    with open(os.path.join(root, name), "w", encoding="utf-8") as handle:
        handle.write(text)
source = os.path.join(root, "src", "model.cpp")
database = [{"directory": os.path.join(root, "build"), "file": source,
             "arguments": ["c++", "-std=c++17", "-I", mocks, "-c", source]}]
with open(os.path.join(root, "build", "compile_commands.json"), "w", encoding="utf-8") as handle:
    json.dump(database, handle)
