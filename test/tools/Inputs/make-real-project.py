#!/usr/bin/env python3
"""Writes a small project for the real clang-tidy-19 and plugin into argv[1],
compiled against the check tests' mock headers (argv[2]), with a compile
database. Usage: make-real-project.py DIR MOCK_INCLUDE_DIR

  src/scope.cpp    two loads under init_empty_weights(); the second is a call
                   spread over three lines, after a non-ASCII comment
  src/offload.cpp  a dispatched model moved with to()
  src/clean.cpp    nothing to find
"""
import json
import os
import sys

root, mocks = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
PRELUDE = """#include <metaguard/metaguard.h>

struct EncoderImpl : torch::nn::Module {
  explicit EncoderImpl(const metaguard::Config &);
};
TORCH_MODULE(Encoder);
"""
files = {
    "src/scope.cpp": PRELUDE + """
void build(const std::filesystem::path &dir) {
  auto guard = metaguard::init_empty_weights();
  auto first = metaguard::from_pretrained<Encoder>(dir);
  /* \u00e9t\u00e9 */ auto second = metaguard::from_pretrained<Encoder>(
      dir,
      {});
}
""",
    "src/offload.cpp": PRELUDE + """
void move(torch::nn::Module &model, const metaguard::DeviceMap &map) {
  metaguard::dispatch_model(model, map, "offload");
  model.to(torch::kCPU);
}
""",
    "src/clean.cpp": PRELUDE + """
void fine(const metaguard::Config &config) {
  auto guard = metaguard::init_empty_weights();
  auto skeleton = metaguard::from_config<Encoder>(config);
}
""",
}
os.makedirs(os.path.join(root, "build"), exist_ok=True)
os.makedirs(os.path.join(root, "src"), exist_ok=True)
for name, text in files.items():
    with open(os.path.join(root, name), "w", encoding="utf-8") as handle:
        handle.write(text)
database = [{"directory": os.path.join(root, "build"), "file": os.path.join(root, name),
             "arguments": ["clang++", "-std=c++17", "-fsyntax-only", "-I", mocks,
                           os.path.join(root, name)]}
            for name in sorted(files)]
with open(os.path.join(root, "build", "compile_commands.json"), "w", encoding="utf-8") as handle:
    json.dump(database, handle, indent=1)
