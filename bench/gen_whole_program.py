#!/usr/bin/env python3
"""Writes a project for bench/run_whole_program.sh into argv[1]: N translation
units (argv[2], default 240) on the check tests' mock headers (argv[3]), with a
compile database in argv[1]/build.

A quarter are leaves (leaf_K.cpp: a loader, a default-device setter and a
helper that moves a model, calling nothing in other files); the rest are
users (user_J.cpp: a meta scope, a dispatch and some plain code, calling
three leaves), so every leaf has about nine callers, like a project's
utility files. Prints the leaf the benchmark edits, its callers, and a user
file, one per line: "leaf: PATH", "callers: PATH ...", "user: PATH".
"""
import json
import os
import sys

root, n, mocks = os.path.abspath(sys.argv[1]), int(sys.argv[2]), os.path.abspath(sys.argv[3])
leaves = max(1, n // 4)
users = n - leaves
src = os.path.join(root, "src")
os.makedirs(src, exist_ok=True)
os.makedirs(os.path.join(root, "build"), exist_ok=True)

header = ["#pragma once", "#include <metaguard/metaguard.h>", "",
          "struct EncoderImpl : torch::nn::Module {",
          "  explicit EncoderImpl(const metaguard::Config &);", "};",
          "TORCH_MODULE(Encoder);", ""]
for k in range(leaves):
    header += [f"Encoder load_{k}(const std::filesystem::path &dir);",
               f"void enter_meta_{k}();",
               f"void move_{k}(torch::nn::Module &model);"]
files = {"project.h": "\n".join(header) + "\n"}

# Plain code, so that a TU is not only its includes.
PLAIN = """
static int plain_{i}_{j}(int a, int b) {{
  int s = 0;
  for (int x = a; x < b; ++x)
    s += x % 7 == 0 ? x : -x;
  return s;
}}
"""
for k in range(leaves):
    body = "".join(PLAIN.format(i=k, j=j) for j in range(10))
    files[f"leaf_{k}.cpp"] = f"""#include "project.h"
{body}
Encoder load_{k}(const std::filesystem::path &dir) {{
  return metaguard::from_pretrained<Encoder>(dir);
}}

void enter_meta_{k}() {{ metaguard::set_default_device("meta"); }}

void move_{k}(torch::nn::Module &model) {{ model.to(torch::kCPU); }}
"""
callers = {k: [] for k in range(leaves)}
for j in range(users):
    picks = sorted({(j * 7 + 1) % leaves, (j * 13 + 5) % leaves, (j * 31 + 11) % leaves})
    for k in picks:
        callers[k].append(f"user_{j}.cpp")
    a, b, c = (picks * 3)[:3]
    body = "".join(PLAIN.format(i=j, j=q) for q in range(10))
    files[f"user_{j}.cpp"] = f"""#include "project.h"
{body}
void build_{j}(const std::filesystem::path &dir) {{
  auto guard = metaguard::init_empty_weights();
  auto encoder = load_{a}(dir);
}}

void after_setter_{j}(const std::filesystem::path &dir) {{
  enter_meta_{b}();
  auto encoder = load_{a}(dir);
}}

void offload_{j}(torch::nn::Module &model, const metaguard::DeviceMap &map) {{
  metaguard::dispatch_model(model, map, "offload");
  move_{c}(model);
}}
"""
for name, text in files.items():
    with open(os.path.join(src, name), "w", encoding="utf-8") as handle:
        handle.write(text)
database = [{"directory": os.path.join(root, "build"), "file": os.path.join(src, name),
             "arguments": ["clang++", "-std=c++17", "-I", mocks, "-c", os.path.join(src, name)]}
            for name in sorted(files) if name.endswith(".cpp")]
with open(os.path.join(root, "build", "compile_commands.json"), "w", encoding="utf-8") as handle:
    json.dump(database, handle, indent=1)
edited = max(callers, key=lambda k: (len(callers[k]), -k))
print(f"leaf: {os.path.join(src, f'leaf_{edited}.cpp')}")
print("callers: " + " ".join(os.path.join(src, c) for c in callers[edited]))
print(f"user: {os.path.join(src, 'user_0.cpp')}")
