"""The Python side of bench/run_side_by_side.sh (a benchmark, not a test).

  side_by_side.py write <work> <MiB> <tokens>
      A random Llama-style checkpoint written by transformers' save_pretrained
      (about <MiB> of float32 in 3 shards) in <work>/checkpoint, a device map
      with the second half of the decoder layers on "disk"
      (<work>/device_map.json, the form transformers and accelerate take;
      metaguard reads the same file) and <tokens> random token ids
      (<work>/ids.safetensors, batch 1).
  side_by_side.py forward <memory|transformers|accelerate> <work> <runs> <warm|cold> <out>
      One process, one variant: load, one untimed forward, then the median of
      <runs> forwards under torch.inference_mode(); cold drops the page cache
      before each (untimed). Prints one JSON line; saves the logits to <out>.
        memory        transformers' from_pretrained, everything on the CPU
        transformers  from_pretrained(device_map=..., offload_folder=...)
        accelerate    init_empty_weights + load_checkpoint_and_dispatch
  side_by_side.py load <work>
      One transformers from_pretrained of the whole checkpoint into memory,
      timed (the caller drops the page cache before the process when cold).
  side_by_side.py report <results.jsonl> <work>
      Medians over the processes of each variant, the logits compared with
      the in-memory transformers forward, and the ratios.

Figures are medians over fresh processes of each process's median; peak RSS is
VmHWM over the timed forwards (reset through /proc/self/clear_refs before
them, as the C++ side does), so it is what the forwards hold, load included
only in what stays resident.
"""
import json
import os
import pathlib
import statistics
import sys
import time

os.environ.setdefault("TQDM_DISABLE", "1")  # no progress bars in the figures
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

import torch

THREADS = 2
# Both sides compute in float32 with the same operators: on the same LibTorch
# (the wheel's) the logits came out bit-identical; against Debian's 1.13 they
# may differ in summation order (~1e-6). Logits are of order 0.1-0.4 here: a
# wrong layer moves them by far more than the tolerance.
RTOL = 1e-4
ATOL = 1e-5


def settings_for(mib):
    """A Llama config of about `mib` MiB of float32 parameters."""
    if mib >= 256:
        hidden, inter, heads, kv, vocab = 1024, 4096, 16, 8, 32000
    else:  # smoke runs
        hidden, inter, heads, kv, vocab = 256, 1024, 8, 4, 4096
    head_dim = hidden // heads
    per_layer = 4 * (2 * hidden * hidden + 2 * hidden * kv * head_dim + 3 * hidden * inter + 2 * hidden)
    fixed = 4 * (2 * vocab * hidden + hidden)
    layers = max(2, round((mib * 2**20 - fixed) / per_layer))
    layers += layers % 2
    return dict(vocab_size=vocab, hidden_size=hidden, intermediate_size=inter, num_hidden_layers=layers,
                num_attention_heads=heads, num_key_value_heads=kv, max_position_embeddings=2048,
                tie_word_embeddings=False)


def write(work, mib, tokens):
    import transformers
    from safetensors.torch import save_file
    work = pathlib.Path(work)
    work.mkdir(parents=True, exist_ok=True)
    config = transformers.LlamaConfig(**settings_for(mib))
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).eval()
    with torch.no_grad():  # logits of order one: a wrong layer shows
        for p in model.parameters():
            p.normal_(0.0, 0.05)
    total = sum(p.numel() * p.element_size() for p in model.parameters())
    model.save_pretrained(work / "checkpoint", max_shard_size=f"{total // 3 // 10**6 + 1}MB")
    layers = config.num_hidden_layers
    device_map = {"model.embed_tokens": "cpu"}
    for i in range(layers):
        device_map[f"model.layers.{i}"] = "disk" if i >= layers // 2 else "cpu"
    device_map.update({"model.norm": "cpu", "model.rotary_emb": "cpu", "lm_head": "cpu"})
    (work / "device_map.json").write_text(json.dumps(device_map, indent=1))
    ids = torch.randint(0, config.vocab_size, (1, tokens), generator=torch.Generator().manual_seed(1))
    save_file({"input_ids": ids}, str(work / "ids.safetensors"))
    print(json.dumps({"parameters_mib": total / 2**20, "layers": layers,
                      "disk_layers": f"{layers // 2}-{layers - 1}", "tokens": tokens}))


def files_under(*folders):
    return [p for f in folders if pathlib.Path(f).exists() for p in pathlib.Path(f).rglob("*") if p.is_file()]


def drop_page_cache(files):
    """All of it as root (drop_caches), else the given files' pages."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("1")
        return "drop_caches"
    except OSError:
        for path in files:
            fd = os.open(path, os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)
        return "posix_fadvise(DONTNEED)"


def peak_rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def reset_peak_rss():
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def load_model(kind, work):
    import transformers
    checkpoint = work / "checkpoint"
    device_map = json.loads((work / "device_map.json").read_text())
    offload = work / f"offload-{kind}-{os.getpid()}"
    common = dict(dtype=torch.float32, attn_implementation="eager")
    if kind == "memory":
        return transformers.LlamaForCausalLM.from_pretrained(checkpoint, **common), None
    if kind == "transformers":
        return transformers.LlamaForCausalLM.from_pretrained(
            checkpoint, device_map=device_map, offload_folder=str(offload), **common), offload
    if kind == "accelerate":
        import accelerate
        config = transformers.LlamaConfig.from_pretrained(checkpoint)
        config._attn_implementation = "eager"
        with accelerate.init_empty_weights():
            model = transformers.LlamaForCausalLM(config)
        model = accelerate.load_checkpoint_and_dispatch(model, str(checkpoint), device_map=device_map,
                                                        offload_folder=str(offload), dtype=torch.float32)
        return model.eval(), offload
    raise SystemExit(f"unknown variant {kind}")


def forward(kind, work, runs, mode, out):
    import shutil
    from safetensors.torch import load_file, save_file
    torch.set_num_threads(THREADS)
    work = pathlib.Path(work)
    ids = load_file(str(work / "ids.safetensors"))["input_ids"]
    start = time.perf_counter()
    model, offload = load_model(kind, work)
    load_s = time.perf_counter() - start
    files = files_under(work / "checkpoint", *( [offload] if offload else []))
    dropped = "none"
    try:
        with torch.inference_mode():
            first = time.perf_counter()
            logits = model(ids).logits  # warm-up
            first_forward_s = time.perf_counter() - first
            times = []
            if mode == "cold":
                dropped = drop_page_cache(files)
            reset_peak_rss()
            for _ in range(runs):
                begin = time.perf_counter()
                logits = model(ids).logits
                times.append(time.perf_counter() - begin)
                if mode == "cold":
                    drop_page_cache(files)
        save_file({"logits": logits.contiguous()}, out)
        print(json.dumps({"load_s": load_s, "first_forward_s": first_forward_s,
                          "forward_s": statistics.median(times), "peak_rss": peak_rss(),
                          "dropped": dropped, "threads": torch.get_num_threads()}))
    finally:
        if offload:
            shutil.rmtree(offload, ignore_errors=True)


def load(work):
    import transformers
    torch.set_num_threads(THREADS)
    checkpoint = pathlib.Path(work) / "checkpoint"
    before = int([l for l in open("/proc/self/status") if l.startswith("VmRSS:")][0].split()[1]) * 1024
    start = time.perf_counter()
    model = transformers.LlamaForCausalLM.from_pretrained(checkpoint, dtype=torch.float32)
    seconds = time.perf_counter() - start
    # transformers leaves the weights mapped from the files, read lazily: a
    # first forward reads them. touched_s adds a read of one float per 4 KiB
    # page of every parameter, so that it counts the disk reads metaguard's
    # load has already done (it populates every page).
    with torch.no_grad():
        for p in model.parameters():
            p.detach().reshape(-1)[::1024].sum()
    touched = time.perf_counter() - start
    print(json.dumps({"load_s": seconds, "touched_s": touched, "rss_added": peak_rss() - before,
                      "parameters": sum(p.numel() for p in model.parameters())}))


def report(results, work):
    from safetensors.torch import load_file
    rows = {}
    for line in open(results):
        label, figures = line.split(" ", 1)
        rows.setdefault(label, []).append(json.loads(figures))

    def med(label, key):
        values = [r[key] for r in rows.get(label, []) if key in r]
        return statistics.median(values) if values else float("nan")

    work = pathlib.Path(work)
    reference = load_file(str(work / "logits-memory-warm.safetensors"))["logits"]
    print(f"logits against transformers in memory (rtol {RTOL}, atol {ATOL}):")
    ok = True
    for path in sorted(work.glob("logits-*.safetensors")):
        got = load_file(str(path))["logits"]
        close = got.shape == reference.shape and torch.allclose(got, reference, rtol=RTOL, atol=ATOL)
        ok &= close
        diff = (got - reference).abs().max().item() if got.shape == reference.shape else float("inf")
        print(f"  {path.stem[7:]:<24} max |diff| {diff:.2e}  {'OK' if close else 'DIFFERS'}")
    mib = 2**20
    print("\nvariant (median over processes)      forward      peak RSS   load     first forward")
    for label in sorted(rows):
        if label.startswith(("forward", "py-forward")):
            print(f"  {label:<34} {med(label, 'forward_s'):8.3f} s  {med(label, 'peak_rss') / mib:7.0f} MiB"
                  f"  {med(label, 'load_s'):6.2f} s  {med(label, 'first_forward_s'):6.3f} s")
    for mode in ("warm", "cold"):
        mg, mg_mem = med(f"forward-metaguard-{mode}", "forward_s"), med("forward-metaguard-memory-warm", "forward_s")
        tf, ac = med(f"py-forward-transformers-{mode}", "forward_s"), med(f"py-forward-accelerate-{mode}", "forward_s")
        tf_mem = med("py-forward-memory-warm", "forward_s")
        read = med(f"read-{mode}", "read_s")
        print(f"\n{mode}: offloaded bytes read alone (pread) {read:.3f} s")
        print(f"RATIO {mode} metaguard / transformers          = {mg / tf:.2f}")
        print(f"RATIO {mode} metaguard / accelerate            = {mg / ac:.2f}")
        if mode == "warm":
            print(f"RATIO warm metaguard overhead / warm read      = {(mg - mg_mem) / read:.2f}"
                  f"  (offloaded {mg:.3f} - in memory {mg_mem:.3f})")
            if "overhead-metaguard-warm" in rows:
                paired = med("overhead-metaguard-warm", "overhead_s")
                print(f"RATIO warm metaguard overhead, paired / warm read = {paired / read:.2f}"
                      f"  ({paired * 1000:.1f} ms: forwards in turns in one process, offloaded "
                      f"{med('overhead-metaguard-warm', 'offloaded_s'):.3f} - in memory "
                      f"{med('overhead-metaguard-warm', 'memory_s'):.3f})")
            print(f"RATIO warm transformers overhead / warm read   = {(tf - tf_mem) / read:.2f}"
                  f"  (offloaded {tf:.3f} - in memory {tf_mem:.3f})")
            if "forward-metaguard-warm-after-transformers" in rows:
                after = med("forward-metaguard-warm-after-transformers", "forward_s")
                print(f"RATIO warm metaguard / transformers, cache as transformers' cold forward left it = "
                      f"{after / tf:.2f}  ({after:.3f} s: 4 KiB folios mapped page by page)")
        else:
            print(f"RATIO cold metaguard / max(compute, cold read) = {mg / max(mg_mem, read):.2f}")
            for label in sorted(rows):
                if label.startswith("forward-metaguard-cold-depth"):
                    deep, depth = med(label, "forward_s"), label.rsplit("depth", 1)[1]
                    print(f"RATIO cold metaguard, prefetch depth {depth} / max(compute, cold read) = "
                          f"{deep / max(mg_mem, read):.2f}  ({deep:.3f} s; / transformers {deep / tf:.2f}, "
                          f"/ accelerate {deep / ac:.2f})")
            if "forward-metaguard-cold-depth0" in rows:
                none = med("forward-metaguard-cold-depth0", "forward_s")
                print(f"RATIO cold metaguard / the same without prefetch = {mg / none:.2f}"
                      f"  ({none:.3f} s; compute {mg_mem:.3f} s, cold read {read:.3f} s: at best "
                      f"{max(mg_mem, read) / (mg_mem + read):.2f})")
            if "forward-metaguard-steady" in rows:
                steady = med("forward-metaguard-steady", "forward_s")
                print(f"RATIO steady metaguard (every forward from disk) / max(compute, cold read) = "
                      f"{steady / max(mg_mem, read):.2f}  ({steady:.3f} s)")
    if "load-metaguard-cold" in rows:
        direct = med("direct-cold", "direct_s")
        mg_load, tf_load = med("load-metaguard-cold", "load_s"), med("py-load-transformers-cold", "load_s")
        tf_touched = med("py-load-transformers-cold", "touched_s")
        print(f"\ncold load, all in memory: metaguard {mg_load:.3f} s, transformers {tf_load:.3f} s "
              f"({tf_touched:.3f} s with every page read), O_DIRECT read of the files {direct:.3f} s")
        print(f"RATIO cold from_pretrained / O_DIRECT floor     = {mg_load / direct:.2f}")
        print(f"RATIO cold metaguard / transformers load       = {mg_load / tf_load:.2f}"
              f"  ({mg_load / tf_touched:.2f} against its load + page reads)")
        print(f"peak RSS added: metaguard {med('load-metaguard-cold', 'rss_added') / mib:.0f} MiB, "
              f"transformers {med('py-load-transformers-cold', 'rss_added') / mib:.0f} MiB")
    return 0 if ok else 1


def report_cgroup(results, work, limit_mib):
    """The figures of bench/run_offload.sh --cgroup."""
    from safetensors.torch import load_file
    rows = {}
    for line in open(results):
        label, figures = line.split(" ", 1)
        rows.setdefault(label, []).append(json.loads(figures))

    def med(label, key):
        values = [r[key] for r in rows.get(label, []) if key in r]
        return statistics.median(values) if values else float("nan")

    work = pathlib.Path(work)
    ok = True
    reference_path = work / "logits-memory-warm.safetensors"
    if not reference_path.exists():
        print("no logits of transformers in memory: the reference run failed (see stderr.log)")
        return 1
    reference = load_file(str(reference_path))["logits"]
    print(f"logits against transformers in memory (rtol {RTOL}, atol {ATOL}):")
    for path in sorted(work.glob("logits-*.safetensors")):
        got = load_file(str(path))["logits"]
        close = got.shape == reference.shape and torch.allclose(got, reference, rtol=RTOL, atol=ATOL)
        ok &= close
        diff = (got - reference).abs().max().item() if got.shape == reference.shape else float("inf")
        print(f"  {path.stem[7:]:<24} max |diff| {diff:.2e}  {'OK' if close else 'DIFFERS'}")
    direct = load_file(str(work / "logits-metaguard-direct.safetensors"))["logits"] \
        if (work / "logits-metaguard-direct.safetensors").exists() else None
    cached = load_file(str(work / "logits-metaguard-cached.safetensors"))["logits"] \
        if (work / "logits-metaguard-cached.safetensors").exists() else None
    if direct is not None and cached is not None:
        same = torch.equal(direct, cached)
        ok &= same
        print(f"  metaguard direct and cached bit-equal: {'yes' if same else 'NO'}")
    failed = sorted({f"{label} ({r.get('reason', 'see stderr.log')})"
                     for label, rs in rows.items() for r in rs if r.get("failed")})
    if failed:
        ok = False
        print(f"failed processes: {', '.join(failed)}")
    mib = 2**20
    print(f"\nvariant (median over processes; cg-: in a {limit_mib} MiB memory cgroup)"
          "   forward     peak RSS   cgroup peak")
    for label in sorted(rows):
        if "forward_s" in rows[label][0] or label.startswith(("cg-", "memory-")):
            cg = med(label, "cgroup_peak")
            print(f"  {label:<28} {med(label, 'forward_s'):8.3f} s  {med(label, 'peak_rss') / mib:7.0f} MiB"
                  f"  {'' if cg != cg else f'{cg / mib:7.0f} MiB'}")
    compute = med("memory-metaguard", "forward_s")
    read = med("read-cold", "read_s")
    floor = max(compute, read)
    print(f"\ncompute (metaguard in memory) {compute:.3f} s, cold read of the offloaded bytes {read:.3f} s")
    busy = med("memory-metaguard-disk-busy", "forward_s")
    print(f"compute while another process reads the disk without pause {busy:.3f} s"
          f" (reading costs this machine's compute {busy / compute - 1:.0%})")
    reads = med("cg-metaguard-automatic", "direct_reads")
    print(f"metaguard automatic read {'with O_DIRECT' if reads > 0 else 'through the page cache'}"
          f" ({reads:.0f} direct reads)")
    for label in ("cg-metaguard-automatic", "cg-metaguard-direct", "cg-metaguard-cached", "cg-transformers", "cg-accelerate"):
        print(f"RATIO {label[3:]:<18} / max(compute, cold read) = {med(label, 'forward_s') / floor:.2f}")
    busy_floor = max(busy, read)
    for label in ("cg-metaguard-automatic", "cg-metaguard-direct"):
        print(f"RATIO {label[3:]:<18} / max(compute while reading, cold read) = "
              f"{med(label, 'forward_s') / busy_floor:.2f}")
    tf, ac = med("cg-transformers", "forward_s"), med("cg-accelerate", "forward_s")
    for mode in ("automatic", "direct", "cached"):
        mg = med(f"cg-metaguard-{mode}", "forward_s")
        print(f"RATIO metaguard {mode:<6} / transformers = {mg / tf:.2f}, / accelerate = {mg / ac:.2f}")
    print(f"RATIO metaguard direct / cached = "
          f"{med('cg-metaguard-direct', 'forward_s') / med('cg-metaguard-cached', 'forward_s'):.2f}")
    return 0 if ok else 1


def main(argv):
    what = argv[1] if len(argv) > 1 else ""
    if what == "write":
        return write(argv[2], int(argv[3]), int(argv[4]))
    if what == "forward":
        return forward(argv[2], argv[3], int(argv[4]), argv[5], argv[6])
    if what == "load":
        return load(argv[2])
    if what == "report":
        return report(argv[2], argv[3])
    if what == "report-cgroup":
        return report_cgroup(argv[2], argv[3], int(argv[4]))
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
