#!/usr/bin/env python3
"""Writes a project with fixable findings for the real clang-tidy and plugin
into argv[1], compiled against the check tests' mock headers (argv[2]).
Usage: make-fix-project.py DIR MOCK_INCLUDE_DIR

  src/a.cpp     a load under init_empty_weights() (metaguard's fix is on a
                note: --fix-notes applies it, --fix does not) and a null
                pointer written 0 (modernize-use-nullptr's fix is its own)
  src/b.cpp     an if without braces (readability-braces-around-statements)
  src/common.h  included by both: a null pointer written 0, reported by both
                translation units with the same fix
"""
import json
import os
import sys

root, mocks = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
files = {
    "src/common.h": "#pragma once\ninline int *shared_pointer() { return 0; }\n",
    "src/a.cpp": """#include <metaguard/metaguard.h>
#include "common.h"

struct EncoderImpl : torch::nn::Module {
  explicit EncoderImpl(const metaguard::Config &);
};
TORCH_MODULE(Encoder);

void build(const std::filesystem::path &dir) {
  auto guard = metaguard::init_empty_weights();
  auto model = metaguard::from_pretrained<Encoder>(dir);
  int *nothing = 0;
}
""",
    "src/b.cpp": """#include "common.h"

int sign(int x) {
  if (x < 0)
    return -1;
  return shared_pointer() == nullptr;
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
            for name in sorted(files) if name.endswith(".cpp")]
with open(os.path.join(root, "build", "compile_commands.json"), "w", encoding="utf-8") as handle:
    json.dump(database, handle, indent=1)
