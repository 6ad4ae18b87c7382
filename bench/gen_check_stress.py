#!/usr/bin/env python3
"""Writes a C++ file that stresses the metaguard checks (not for CI).

usage: gen_check_stress.py OUT N

One translation unit against the lit mock headers (test/checks/Inputs), so
that the checks' own work, not LibTorch's parsing, dominates:
- one function with N (declaration + load) pairs under one meta scope (the
  innermost-live-guard search used to rescan the block for each load);
- N small functions, each a chain helper -> helper -> load called under a
  scope, a default-device setter or with_meta_device;
- N functions that dispatch a model and then move it, strip and save it.
Doubling N doubles every part.
"""
import sys

out, n = sys.argv[1], int(sys.argv[2])
lines = [
    "#include <metaguard/metaguard.h>",
    "namespace fs = std::filesystem;",
    "struct NetImpl : metaguard::PreTrainedModel {",
    "  explicit NetImpl(const metaguard::Config &);",
    "  torch::Tensor forward(torch::Tensor x);",
    "  torch::Tensor weight;",
    "};",
    "TORCH_MODULE(Net);",
    "",
    "void manyPairs(const fs::path &p) {",
    "  auto guard = metaguard::init_empty_weights();",
]
for i in range(n):
    lines.append(f"  int v{i} = {i};")
    lines.append(f"  auto m{i} = metaguard::from_pretrained<Net>(p);")
lines.append("}")
for i in range(n):
    lines += [
        f"Net load{i}(const fs::path &p) {{ return metaguard::from_pretrained<Net>(p); }}",
        f"Net mid{i}(const fs::path &p) {{ return load{i}(p); }}",
        f"void scoped{i}(const fs::path &p) {{",
        "  metaguard::MetaDeviceScope scope;",
        f"  mid{i}(p);",
        "}",
        f"void defaulted{i}(const fs::path &p, bool b) {{",
        "  metaguard::set_default_device(\"meta\");",
        "  if (b)",
        "    metaguard::reset_default_device();",
        f"  mid{i}(p);",
        "}",
        f"void lambda{i}(const fs::path &p) {{",
        f"  metaguard::with_meta_device([&] {{ return mid{i}(p); }});",
        "}",
        f"void offload{i}(const fs::path &p, const metaguard::DeviceMap &map, torch::Tensor x) {{",
        "  metaguard::LoadOptions options;",
        "  options.device_map = map;",
        "  auto m = metaguard::from_pretrained<Net>(p, options);",
        "  m->weight.set_data(x);",
        "  metaguard::remove_hook_from_module(*m, true);",
        "  metaguard::save_pretrained(*m, p);",
        "  m->to(torch::kCUDA);",
        "}",
    ]
with open(out, "w", encoding="utf-8") as f:
    f.write("\n".join(lines) + "\n")
