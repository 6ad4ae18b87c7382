#!/usr/bin/env python3
"""Writes the same cases twice into argv[1], compiled against the check
tests' mock headers (argv[2]), as two CMake projects configured with
CMAKE_EXPORT_COMPILE_COMMANDS:

  single/  each case in one file: what per-file mode sees
  split/   each case's parts in files of their own (the callee in another
           file than the call): what whole-program mode must see the same way

and argv[1]/layout.json, which maps each line of every written file to
(case, part, line in the part), so that compare-parity.py can put the
findings of both layouts side by side.

Each case is a header (declarations, shared by its parts) and parts, the
last one holding the calls that are flagged. Everything of a case lives in
a namespace of its own, so the cases do not share functions.
"""
import json
import os
import subprocess
import sys

PRELUDE = """#pragma once
#include <metaguard/metaguard.h>
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>
namespace fs = std::filesystem;
struct VisionImpl : torch::nn::Module {
  explicit VisionImpl(const metaguard::Config &);
  torch::Tensor forward(torch::Tensor x);
};
TORCH_MODULE(Vision);
"""

# A composite model whose constructor (in a part of its own) loads a
# pretrained part (in another part).
CAPTIONER_HEADER = """Vision load_vision(const fs::path &dir);
struct CaptionerImpl : torch::nn::Module {
  CaptionerImpl(const metaguard::Config &c, const fs::path &dir);
  Vision vision{nullptr};
};
TORCH_MODULE(Captioner);
"""
VISION = """Vision load_vision(const fs::path &dir) {
  return metaguard::from_pretrained<Vision>(dir);
}
"""
CAPTIONER = """CaptionerImpl::CaptionerImpl(const metaguard::Config &c,
                             const fs::path &dir) {
  vision = load_vision(dir);
}
"""


def captioner_case(statement):
    """A call of the captioner's constructor under a meta scope."""
    return (CAPTIONER_HEADER, [("vision", VISION), ("captioner", CAPTIONER), ("use", f"""
void build(const metaguard::Config &c, const fs::path &dir) {{
  auto guard = metaguard::init_empty_weights();
  {statement}
}}
""")])


CASES = {
    # Meta scope check: the shapes of "Through calls".
    "plain_call": (CAPTIONER_HEADER, [("vision", VISION), ("use", """
void build(const fs::path &dir) {
  auto guard = metaguard::init_empty_weights();
  auto v = load_vision(dir);
}
""")]),
    "holder_ctor": captioner_case("Captioner skeleton(c, dir);"),
    # One file per shape: a file's other calls must not make it look at the
    # constructor's summary.
    "make_shared": captioner_case("auto shared = std::make_shared<CaptionerImpl>(c, dir);"),
    "make_unique": captioner_case("auto unique = std::make_unique<CaptionerImpl>(c, dir);"),
    "new_expr": captioner_case("auto *raw = new CaptionerImpl(c, dir);"),
    "emplace_back": captioner_case("std::vector<Captioner> all;\n  all.emplace_back(c, dir);"),
    "factory": (CAPTIONER_HEADER + "Captioner make_captioner(const metaguard::Config &c, const fs::path &dir);\n",
                [("vision", VISION), ("captioner", CAPTIONER), ("factory", """
Captioner make_captioner(const metaguard::Config &c, const fs::path &dir) {
  return Captioner(c, dir);
}
"""), ("use", """
void build(const metaguard::Config &c, const fs::path &dir) {
  auto guard = metaguard::init_empty_weights();
  auto captioner = make_captioner(c, dir);
}
""")]),
    "member_init": (CAPTIONER_HEADER + """struct PipelineImpl : torch::nn::Module {
  PipelineImpl(const metaguard::Config &c, const fs::path &dir);
  Captioner captioner;
};
struct HeadImpl : torch::nn::Module {
  HeadImpl();
  Vision vision = load_vision("head");
};
""", [("vision", VISION), ("captioner", CAPTIONER), ("pipeline", """
PipelineImpl::PipelineImpl(const metaguard::Config &c, const fs::path &dir)
    : captioner(c, dir) {}
HeadImpl::HeadImpl() {}
"""), ("use", """
void build(const metaguard::Config &c, const fs::path &dir) {
  auto guard = metaguard::init_empty_weights();
  PipelineImpl pipeline(c, dir);
  HeadImpl head;
}
""")]),
    # The override is declared only in its own file when split.
    "virtual_call": ("""Vision load_vision(const fs::path &dir);
struct Builder {
  virtual ~Builder() = default;
  virtual Vision build(const fs::path &dir) = 0;
  virtual void enter() {}
};
Builder &vision_builder();
""", [("vision", VISION), ("builder", """
struct VisionBuilder : Builder {
  Vision build(const fs::path &dir) override { return load_vision(dir); }
  void enter() override;
};
void VisionBuilder::enter() { metaguard::set_default_device("meta"); }
Builder &vision_builder() {
  static VisionBuilder builder;
  return builder;
}
"""), ("use", """
void build(Builder &b, const fs::path &dir) {
  auto guard = metaguard::init_empty_weights();
  auto v = b.build(dir);
}
void after_enter(Builder &b, const fs::path &dir) {
  b.enter();
  auto v = metaguard::from_pretrained<Vision>(dir);
}
""")]),
    "lambdas": (CAPTIONER_HEADER, [("vision", VISION), ("captioner", CAPTIONER), ("use", """
void build(const metaguard::Config &c, const fs::path &dir) {
  metaguard::with_meta_device([&] { return Captioner(c, dir); });
  auto make = [&] { return load_vision(dir); };
  auto guard = metaguard::init_empty_weights();
  auto v = make();
}
""")]),
    "setters": ("""Vision load_vision(const fs::path &dir);
void enter_meta();
void leave_meta();
struct MetaSession {
  MetaSession();
};
""", [("vision", VISION), ("setters", """
void enter_meta() { metaguard::set_default_device("meta"); }
void leave_meta() { metaguard::reset_default_device(); }
MetaSession::MetaSession() { enter_meta(); }
"""), ("use", """
void after_enter(const fs::path &dir) {
  enter_meta();
  auto v = load_vision(dir);
}
void after_leave(const fs::path &dir) {
  enter_meta();
  leave_meta();
  auto v = load_vision(dir);
}
void session(const fs::path &dir) {
  MetaSession s;
  auto v = metaguard::from_pretrained<Vision>(dir);
}
""")]),
    # Threads: a thread's body (another part) loads with the process's
    # default device; a helper (another part) whose loads all run on a
    # thread it starts is reached by the caller's default device, not by
    # the caller's scope.
    "threads": ("""Vision load_vision(const fs::path &dir);
void start_loader(const fs::path &dir);
""", [("vision", VISION), ("starter", """
void start_loader(const fs::path &dir) {
  std::thread worker(load_vision, dir);
  worker.join();
}
"""), ("use", """
void after_meta(const fs::path &dir) {
  metaguard::set_default_device("meta");
  std::thread worker(load_vision, dir);
  worker.join();
  start_loader(dir);
}
void in_scope(const fs::path &dir) {
  auto guard = metaguard::init_empty_weights();
  start_loader(dir);
}
""")]),
    # A table of factories (a global std::map of std::function) filled in
    # one part and called through in another: every function stored there
    # is a target, as in one file.
    "function_tables": ("""Vision load_vision(const fs::path &dir);
Vision empty_vision(const fs::path &dir);
extern std::map<std::string, std::function<Vision(const fs::path &)>> factories;
""", [("vision", VISION), ("registry", """
std::map<std::string, std::function<Vision(const fs::path &)>> factories;
void register_factories() {
  factories["pretrained"] = load_vision;
  factories.emplace("empty", empty_vision);
}
Vision empty_vision(const fs::path &dir) {
  return metaguard::from_config<Vision>(metaguard::load_config(dir));
}
"""), ("use", """
Vision build(const std::string &name, const fs::path &dir) {
  auto guard = metaguard::init_empty_weights();
  return factories.at(name)(dir);
}
void build_all(const fs::path &dir) {
  metaguard::set_default_device("meta");
  for (auto &[name, make] : factories)
    make(dir);
  metaguard::reset_default_device();
}
""")]),
    # A registry: a table a helper returns a reference to (a static local),
    # filled by a namespace-scope initialiser with a lambda in one part and
    # called through the helper in another: the table is known by the
    # helper, and the lambda's summary travels with the stores.
    "registries": ("""Vision load_vision(const fs::path &dir);
using Registry = std::map<std::string, std::function<Vision(const fs::path &)>>;
Registry &registry();
""", [("vision", VISION), ("registry", """
Registry &registry() {
  static Registry r;
  return r;
}
static bool registered =
    (registry()["bert"] = [](const fs::path &dir) { return load_vision(dir); }, true);
"""), ("use", """
Vision build(const std::string &name, const fs::path &dir) {
  auto guard = metaguard::init_empty_weights();
  return registry().at(name)(dir);
}
void build_found(const std::string &name, const fs::path &dir) {
  metaguard::set_default_device("meta");
  registry().find(name)->second(dir);
  metaguard::reset_default_device();
}
""")]),
    # RAII sessions: a constructor sets the default device, the destructor
    # (in a third part) resets it; one destructor is never defined.
    "sessions": ("""struct ScopedSession {
  ScopedSession();
  ~ScopedSession();
};
struct OpaqueSession {
  OpaqueSession();
  ~OpaqueSession();
};
struct LoggingSession {
  LoggingSession();
  ~LoggingSession();
  int uses = 0;
};
""", [("ctor", """
ScopedSession::ScopedSession() { metaguard::set_default_device("meta"); }
OpaqueSession::OpaqueSession() { metaguard::set_default_device("meta"); }
LoggingSession::LoggingSession() { metaguard::set_default_device("meta"); }
"""), ("dtor", """
ScopedSession::~ScopedSession() { metaguard::reset_default_device(); }
LoggingSession::~LoggingSession() { uses = 0; }
"""), ("use", """
void inside(const fs::path &dir) {
  ScopedSession s;
  auto v = metaguard::from_pretrained<Vision>(dir);
}
void after(const fs::path &dir) {
  {
    ScopedSession s;
  }
  auto v = metaguard::from_pretrained<Vision>(dir);
  ScopedSession();
  auto w = metaguard::from_pretrained<Vision>(dir);
}
void opaque(const fs::path &dir) {
  {
    OpaqueSession s;
    auto v = metaguard::from_pretrained<Vision>(dir);
  }
  auto v = metaguard::from_pretrained<Vision>(dir);
}
void logging(const fs::path &dir) {
  {
    LoggingSession s;
  }
  auto v = metaguard::from_pretrained<Vision>(dir);
}
void owned(const fs::path &dir) {
  {
    auto s = std::make_unique<ScopedSession>();
    auto v = metaguard::from_pretrained<Vision>(dir);
  }
  auto v = metaguard::from_pretrained<Vision>(dir);
}
""")]),
    "options": ("""metaguard::LoadOptions cpu_options();
metaguard::LoadOptions offload_options();
""", [("options", """
metaguard::LoadOptions cpu_options() { return {metaguard::DeviceMap::on("cpu")}; }
metaguard::LoadOptions offload_options() {
  metaguard::LoadOptions options;
  options.device_map = metaguard::DeviceMap::automatic();
  options.offload_folder = "offload";
  return options;
}
"""), ("use", """
void build(const fs::path &dir) {
  auto guard = metaguard::init_empty_weights();
  auto v = metaguard::from_pretrained<Vision>(dir, cpu_options());
}
void offloaded(const fs::path &dir) {
  auto v = metaguard::from_pretrained<Vision>(dir, offload_options());
  v->to(torch::kCUDA);
}
""")]),
    # Offloaded-parameter check: helpers, factories, apply, overrides.
    "moves": ("""void move_to_cpu(torch::nn::Module &model);
void zero_weights(torch::nn::Module &model);
void strip_hooks(torch::nn::Module &model);
void move_one(torch::nn::Module &module);
Vision load_offloaded(const fs::path &dir);
struct Mover {
  virtual ~Mover() = default;
  virtual void place(torch::nn::Module &model) = 0;
};
struct ModelMover {
  explicit ModelMover(torch::nn::Module &model);
};
""", [("helpers", """
void move_to_cpu(torch::nn::Module &model) { model.to(torch::kCPU); }
void zero_weights(torch::nn::Module &model) {
  for (auto &p : model.parameters())
    p.set_data(torch::zeros({1}));
}
void strip_hooks(torch::nn::Module &model) {
  metaguard::remove_hook_from_module(model, true);
}
void move_one(torch::nn::Module &module) { module.to(torch::kCUDA); }
Vision load_offloaded(const fs::path &dir) {
  return metaguard::from_pretrained<Vision>(
      dir, {.device_map = metaguard::DeviceMap::automatic()});
}
ModelMover::ModelMover(torch::nn::Module &model) { model.to(torch::kCPU); }
"""), ("mover", """
struct CudaMover : Mover {
  void place(torch::nn::Module &model) override { model.to(torch::kCUDA); }
};
"""), ("use", """
void offload(torch::nn::Module &model, const metaguard::DeviceMap &map,
             Mover &mover) {
  metaguard::dispatch_model(model, map, "offload");
  move_to_cpu(model);
  zero_weights(model);
  mover.place(model);
  model.apply(move_one);
  ModelMover moved(model);
}
void hooks(torch::nn::Module &model, const metaguard::DeviceMap &map) {
  metaguard::dispatch_model(model, map, "offload");
  strip_hooks(model);
  metaguard::save_pretrained(model, "out");
}
void factory(const fs::path &dir) {
  auto v = load_offloaded(dir);
  v->to(torch::kCUDA);
}
""")]),
    # Factories that return a dispatched model through other factories: the
    # notes follow the chain into each file (the summaries carry the steps).
    "factory_chain": ("""Vision load_offloaded(const fs::path &dir);
Vision dispatched(Vision v, const metaguard::DeviceMap &map);
Vision make_pipeline(const fs::path &dir);
Vision make_dispatched(const metaguard::Config &c, const metaguard::DeviceMap &map);
""", [("loader", """
Vision load_offloaded(const fs::path &dir) {
  return metaguard::from_pretrained<Vision>(
      dir, {.device_map = metaguard::DeviceMap::automatic()});
}
"""), ("dispatcher", """
Vision dispatched(Vision v, const metaguard::DeviceMap &map) {
  metaguard::dispatch_model(*v, map, "offload");
  return v;
}
"""), ("pipeline", """
Vision make_pipeline(const fs::path &dir) { return load_offloaded(dir); }
Vision make_dispatched(const metaguard::Config &c, const metaguard::DeviceMap &map) {
  return dispatched(Vision(c), map);
}
"""), ("use", """
void pipeline(const fs::path &dir) {
  auto v = make_pipeline(dir);
  v->to(torch::kCUDA);
}
void dispatched_copy(const metaguard::Config &c, const metaguard::DeviceMap &map) {
  auto v = make_dispatched(c, map);
  v->to(torch::kCPU);
}
""")]),
    # Empty models (metaguard-empty-model-used): a factory that returns one,
    # one that builds with its caller's device, helpers that use or load
    # their argument, and a constructor that leaves a member model empty
    # for a method to use, each in a file of its own.
    "empty_models": ("""Vision skeleton(const metaguard::Config &c);
Vision built(const metaguard::Config &c);
torch::Tensor run(Vision &v, torch::Tensor x);
void load_into(Vision &v, const fs::path &dir);
class Runner {
public:
  explicit Runner(const metaguard::Config &c);
  void load(const fs::path &dir);
  torch::Tensor run(torch::Tensor x);
private:
  Vision model_{nullptr};
};
""", [("factory", """
Vision skeleton(const metaguard::Config &c) {
  auto guard = metaguard::init_empty_weights();
  return Vision(c);
}
Vision built(const metaguard::Config &c) { return Vision(c); }
"""), ("helpers", """
torch::Tensor run(Vision &v, torch::Tensor x) { return v->forward(x); }
void load_into(Vision &v, const fs::path &dir) {
  metaguard::load_weights(*v, dir);
}
"""), ("runner", """
Runner::Runner(const metaguard::Config &c) {
  auto guard = metaguard::init_empty_weights();
  model_ = Vision(c);
}
void Runner::load(const fs::path &dir) { metaguard::load_weights(*model_, dir); }
torch::Tensor Runner::run(torch::Tensor x) { return model_->forward(x); }
"""), ("use", """
void factory(const metaguard::Config &c, torch::Tensor x) {
  auto v = skeleton(c);
  v->forward(x);
}
void helper(const metaguard::Config &c, torch::Tensor x) {
  auto v = skeleton(c);
  run(v, x);
}
void loaded(const metaguard::Config &c, const fs::path &dir, torch::Tensor x) {
  auto v = skeleton(c);
  load_into(v, dir);
  run(v, x);
}
void callers_device(const metaguard::Config &c) {
  auto guard = metaguard::init_empty_weights();
  auto v = built(c);
  v->to(torch::kCUDA);
}
void member(const metaguard::Config &c, torch::Tensor x) {
  Runner r(c);
  r.run(x);
}
void member_loaded(const metaguard::Config &c, const fs::path &dir,
                   torch::Tensor x) {
  Runner r(c);
  r.load(dir);
  r.run(x);
}
""")]),
    # Helpers that take tensors, strip hooks and then need them, or need
    # the hooks the caller removed; run by algorithms and threads.
    "walks": ("""void halve(torch::Tensor &p);
void move_to_gpu(torch::nn::Module &model);
void strip_and_save(torch::nn::Module &model);
void export_model(const torch::nn::Module &model);
void train(std::vector<torch::Tensor> params);
""", [("helpers", """
void halve(torch::Tensor &p) { p.mul_(0.5); }
void move_to_gpu(torch::nn::Module &model) { model.to(torch::kCUDA); }
void strip_and_save(torch::nn::Module &model) {
  metaguard::remove_hook_from_module(model, true);
  metaguard::save_pretrained(model, "out");
}
void export_model(const torch::nn::Module &model) {
  metaguard::save_pretrained(model, "out");
}
void train(std::vector<torch::Tensor> params) {
  torch::optim::Adam opt(params);
  opt.step();
}
"""), ("use", """
void walk(torch::nn::Module &model, const metaguard::DeviceMap &map) {
  metaguard::dispatch_model(model, map, "offload");
  auto params = model.parameters();
  std::for_each(params.begin(), params.end(), halve);
  halve(params[0]);
  std::thread worker(move_to_gpu, std::ref(model));
  worker.join();
  strip_and_save(model);
  train(model.parameters());
}
void hooks(torch::nn::Module &model, const metaguard::DeviceMap &map) {
  metaguard::dispatch_model(model, map, "offload");
  metaguard::remove_hook_from_module(model, true);
  export_model(model);
}
void fine(torch::nn::Module &model, const metaguard::DeviceMap &map) {
  metaguard::dispatch_model(model, map, "offload");
  export_model(model);
  auto copy = metaguard::load_offloaded_parameter(model, "w");
  halve(copy);
}
""")]),
    # Helpers and constructors (another part) that set the device their
    # parameter gives: a default argument "meta" left out at the call sets
    # meta; "cpu" resets it.
    "param_setters": ("""Vision load_vision(const fs::path &dir);
void use_device(const std::string &d = "meta");
void enter(const std::string &name = "meta");
struct ParamSession {
  explicit ParamSession(const std::string &device = "meta");
};
""", [("vision", VISION), ("setters", """
void use_device(const std::string &d) { metaguard::set_default_device(d); }
void enter(const std::string &name) { use_device(name); }
ParamSession::ParamSession(const std::string &device) {
  metaguard::set_default_device(device);
}
"""), ("use", """
void by_default(const fs::path &dir) {
  use_device();
  auto v = load_vision(dir);
}
void given_cpu(const fs::path &dir) {
  use_device("cpu");
  auto v = load_vision(dir);
}
void through_enter(const fs::path &dir) {
  enter();
  auto v = load_vision(dir);
}
void session(const fs::path &dir) {
  ParamSession s;
  auto v = metaguard::from_pretrained<Vision>(dir);
}
""")]),
    # A helper (another part) whose catch handler keeps the meta device;
    # a virtual call whose pure base has overrides (other parts) that all
    # reset it, or one that does not; a session (another part) emplaced
    # into a std::optional.
    "handlers": ("""Vision load_vision(const fs::path &dir);
void may_throw();
void enter_and_try();
struct Device {
  virtual ~Device() = default;
  virtual void reset_device() = 0;
};
struct CpuDevice : Device {
  void reset_device() override;
};
struct Stage {
  virtual ~Stage() = default;
  virtual void reset_device() = 0;
};
struct CpuStage : Stage {
  void reset_device() override;
};
struct LoggingStage : Stage {
  void reset_device() override;
};
struct Session {
  Session();
  ~Session();
};
""", [("vision", VISION), ("enter", """
void enter_and_try() {
  try {
    metaguard::set_default_device("meta");
    may_throw();
    metaguard::reset_default_device();
  } catch (...) {
  }
}
"""), ("overrides", """
void CpuDevice::reset_device() { metaguard::set_default_device("cpu"); }
void CpuStage::reset_device() { metaguard::reset_default_device(); }
void LoggingStage::reset_device() {}
"""), ("session", """
Session::Session() { metaguard::set_default_device("meta"); }
Session::~Session() { metaguard::reset_default_device(); }
"""), ("use", """
void after_try(const fs::path &dir) {
  enter_and_try();
  auto v = load_vision(dir);
}
void every_override_resets(Device *obj, const fs::path &dir) {
  metaguard::set_default_device("meta");
  obj->reset_device();
  auto v = load_vision(dir);
}
void one_override_keeps(Stage *obj, const fs::path &dir) {
  metaguard::set_default_device("meta");
  obj->reset_device();
  auto v = load_vision(dir);
}
void optional_session(const fs::path &dir) {
  std::optional<Session> s;
  s.emplace();
  auto a = load_vision(dir);
  s.reset();
  auto b = load_vision(dir);
}
""")]),
    # Sessions (another part) held in a std::optional started by
    # std::in_place or an assignment, or in a std::unique_ptr filled by
    # reset(new ...), whose constructor sets the device its parameter gives
    # through a data member.
    "holders": ("""Vision load_vision(const fs::path &dir);
struct Session {
  explicit Session(std::string device = "meta");
  Session(Session &&other) noexcept;
  Session &operator=(Session &&other) noexcept;
  ~Session();
  std::string device_;
  bool active_ = true;
};
""", [("vision", VISION), ("session", """
Session::Session(std::string device) : device_(std::move(device)) {
  metaguard::set_default_device(device_);
}
Session::Session(Session &&other) noexcept : active_(other.active_) {
  other.active_ = false;
}
Session &Session::operator=(Session &&other) noexcept {
  active_ = other.active_;
  other.active_ = false;
  return *this;
}
Session::~Session() {
  if (active_)
    metaguard::reset_default_device();
}
"""), ("use", """
void in_place(const fs::path &dir) {
  std::optional<Session> s{std::in_place, "meta"};
  auto a = load_vision(dir);
  s.reset();
  auto b = load_vision(dir);
}
void assigned(const fs::path &dir) {
  std::optional<Session> s;
  s = Session();
  auto a = load_vision(dir);
  s = {};
  auto b = load_vision(dir);
}
void reset_new(const fs::path &dir) {
  std::unique_ptr<Session> p;
  p.reset(new Session("meta"));
  auto a = load_vision(dir);
  p = nullptr;
  auto b = load_vision(dir);
}
void on_cpu(const fs::path &dir) {
  std::optional<Session> s{std::in_place, "cpu"};
  auto a = load_vision(dir);
}
""")]),
}

root, mocks = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
layout = {}


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def source(name, header, parts, where):
    """The text of a file holding parts (a list of (part, code)), and records
    where each part starts in layout[where]."""
    lines = [f'#include "{header}"']
    spans = []
    for part, code in parts:
        lines.append(f"namespace {name} {{")
        spans.append([part, len(lines) + 1])
        lines.extend(code.strip("\n").split("\n"))
        lines.append(f"}} // namespace {name}")
    layout[where] = {"case": name, "parts": spans}
    return "\n".join(lines) + "\n"


for kind in ("single", "split"):
    folder = os.path.join(root, kind)
    sources = []
    write(os.path.join(folder, "src", "prelude.h"), PRELUDE)
    for name, (decls, parts) in CASES.items():
        write(os.path.join(folder, "src", f"{name}.h"),
              f'#pragma once\n#include "prelude.h"\nnamespace {name} {{\n{decls}}} // namespace {name}\n')
        groups = [(name, parts)] if kind == "single" else [(f"{name}_{p}", [(p, c)]) for p, c in parts]
        for file_name, group in groups:
            path = os.path.join(folder, "src", f"{file_name}.cpp")
            write(path, source(name, f"{name}.h", group, path))
            sources.append(f"src/{file_name}.cpp")
    write(os.path.join(folder, "CMakeLists.txt"), f"""cmake_minimum_required(VERSION 3.16)
project(parity CXX)
set(CMAKE_CXX_STANDARD 20)
add_library(app OBJECT {' '.join(sorted(sources))})
# Included the way LibTorch is: as system headers.
target_include_directories(app SYSTEM PRIVATE "{mocks}")
""")
    compiler = os.environ.get("CXX_FOR_TESTS", "clang++-19")
    subprocess.run(["cmake", "-S", folder, "-B", os.path.join(folder, "build"), "-G", "Ninja",
                    f"-DCMAKE_CXX_COMPILER={compiler}", "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON"],
                   check=True, stdout=subprocess.DEVNULL)
write(os.path.join(root, "layout.json"), json.dumps(layout, indent=1) + "\n")
