#!/usr/bin/env python3
"""Quantized KV cache (Q8_0, Q4_0) against the F16 cache, mlstack beside llama.cpp, on one GGUF:

  --kl     logit KL divergence and top-1 agreement against the same engine with an F16 cache,
           over the first N tokens of a text (one sequence), scored on positions N/2 .. N-1:
           `mlstack kl -m GGUF -f TEXT --tokens N -ctk T -ctv T` and llama-perplexity -c N
           --chunks 1 -fa on (an f16 run saving its logits with --kl-divergence-base, then one
           per type with --kl-divergence; llama.cpp scores the second half of a chunk)
  --bench  decode tokens/s of --gen tokens at depth --depth: `mlstack bench -p 0 -n G -d D
           --cache-type-k T --cache-type-v T` and `llama-bench -p 0 -n G -d D -ctk T -ctv T
           -fa 1`, per thread count (-r repetitions each, the median; llama-bench --no-warmup at a
           depth: it fills the depth again before each repetition, which warms the same weights)

  python3 tools/kvquant_table.py --gguf models/SmolLM2-135M-Instruct.Q4_1.gguf --text FILE \\
          --kl --depths 1024,4096,8192 --bench --depth 8128 --threads 1,2

  --make-text FILE  writes the text the tables in docs/performance-log.md used: the files of
           /usr/share/common-licenses/ then /usr/share/doc/*/copyright (each sorted by name,
           symlinks followed, unreadable or non-UTF-8 ones skipped) joined with blank lines until
           it holds 256 KiB (about 60k tokens: llama-perplexity -c N wants 2N of them)

Needs build/mlstack and llama-perplexity / llama-bench in --peer/bin (tools/build_llamacpp.sh
with LLAMACPP_TARGETS="llama-bench llama-perplexity"). Prints Markdown tables."""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def sh(cmd, timeout=3600):
    print("+ " + " ".join(cmd), file=sys.stderr, flush=True)
    p = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    if p.returncode:
        sys.exit("failed (%d): %s\n%s" % (p.returncode, " ".join(cmd), p.stderr.decode()[-3000:]))
    return p.stdout.decode() + p.stderr.decode()


def ours_kl(a, n, t):
    out = sh([a.mlstack, "kl", "-m", a.gguf, "-f", a.text, "--tokens", str(n), "-t", str(a.kl_threads),
              "--cache-type-k", t, "--cache-type-v", t])
    row = [ln for ln in out.splitlines() if ln.startswith("| %s/%s |" % (t, t))][0]
    print("  mlstack %d: %s" % (n, row), file=sys.stderr, flush=True)  # max KL and both perplexities
    row = row.split("|")
    return float(row[3]), float(row[5].strip().rstrip("%"))


def peer_kl(a, n, types, work):
    ppl = os.path.join(a.peer, "bin", "llama-perplexity")
    base = os.path.join(work, "base-%d.bin" % n)
    common = [ppl, "-m", a.gguf, "-f", a.text, "-c", str(n), "-b", str(min(n, 2048)), "--chunks", "1", "-fa", "on",
              "-t", str(a.kl_threads)]
    sh(common + ["--kl-divergence-base", base])
    res = {}
    for t in types:
        out = sh(common + ["-ctk", t, "-ctv", t, "--kl-divergence-base", base, "--kl-divergence"])
        keep = [ln.strip() for ln in out.splitlines() if re.match(r"\s*(Mean PPL|Mean\s+KLD|Maximum KLD|Same top)", ln)]
        print("  llama.cpp %d %s: %s" % (n, t, " / ".join(keep)), file=sys.stderr, flush=True)
        kld = re.search(r"Mean\s+KLD:\s+([-0-9.eE]+)", out)
        top = re.search(r"Same top p:\s+([0-9.]+)", out)
        res[t] = (float(kld.group(1)) if kld else float("nan"), float(top.group(1)) if top else float("nan"))
    os.remove(base)
    return res


def make_text(path, want=256 * 1024):
    import glob
    files = sorted(glob.glob("/usr/share/common-licenses/*")) + sorted(glob.glob("/usr/share/doc/*/copyright"))
    parts, size = [], 0
    for f in files:
        try:
            with open(f, encoding="utf-8") as fh:
                t = fh.read().strip()
        except (OSError, UnicodeDecodeError):
            continue
        if t and size < want:
            parts.append(t)
            size += len(t.encode()) + 2
    if size < want:
        sys.exit("make-text: only %d bytes found" % size)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n\n".join(parts) + "\n")
    print("%s: %d files, %d bytes" % (path, len(parts), os.path.getsize(path)), file=sys.stderr)


def cache_bytes_per_token(gguf_path, t):
    """K and V bytes of one position over all layers: n_layers * n_kv_heads * head_dim * 2 values
    at f16's 2 bytes, Q8_0's 34 / 32 or Q4_0's 18 / 32 (both engines store these blocks)."""
    import gguf
    r = gguf.GGUFReader(gguf_path)
    arch = bytes(r.fields["general.architecture"].parts[-1]).decode()
    val = lambda k: int(r.fields["%s.%s" % (arch, k)].parts[-1][0])
    kvh = val("attention.head_count_kv" if "%s.attention.head_count_kv" % arch in r.fields else "attention.head_count")
    dh = val("embedding_length") // val("attention.head_count")
    per = {"f16": 2.0, "q8_0": 34 / 32, "q4_0": 18 / 32}[t]
    return int(val("block_count") * kvh * dh * 2 * per)


def ours_tg(a, t, th):
    out = sh([a.mlstack, "bench", "-m", a.gguf, "-p", "0", "-n", str(a.gen), "-d", str(a.depth), "-t", str(th),
              "-r", str(a.reps), "--bw-mib", "0", "--json", "--cache-type-k", t, "--cache-type-v", t])
    for ln in out.splitlines():
        if ln.startswith("{") and '"n_gen"' in ln:
            return json.loads(ln)["tps_median"]
    return float("nan")


def peer_tg(a, t, th):
    out = sh([os.path.join(a.peer, "bin", "llama-bench"), "-m", a.gguf, "-p", "0", "-n", str(a.gen), "-d",
              str(a.depth), "-t", str(th), "-r", str(a.reps), "-ctk", t, "-ctv", t, "-fa", "1", "-o", "json"] +
             (["--no-warmup"] if a.depth else []))
    js = json.loads(out[out.index("["):out.rindex("]") + 1])
    return statistics.median(js[0]["samples_ts"]) if js else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gguf")
    ap.add_argument("--make-text", metavar="FILE", help="write the license/copyright text to FILE and stop")
    ap.add_argument("--engines", default="mlstack,llama.cpp", help="--kl: which engines to run (the other's columns: -)")
    ap.add_argument("--text", help="--kl: the text (at least twice the deepest depth in tokens for llama.cpp)")
    ap.add_argument("--peer", default=os.path.join(ROOT, "peer"))
    ap.add_argument("--mlstack", default=os.path.join(ROOT, "build", "mlstack"))
    ap.add_argument("--types", default="q8_0,q4_0")
    ap.add_argument("--kl", action="store_true")
    ap.add_argument("--depths", default="1024,4096,8192")
    ap.add_argument("--kl-threads", type=int, default=2)
    ap.add_argument("--bench", action="store_true")
    ap.add_argument("--depth", type=int, default=8128)
    ap.add_argument("--gen", type=int, default=32)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("-r", "--reps", type=int, default=3)
    ap.add_argument("--skip", default="", help="--bench: cache types (of f16 and --types) to leave out")
    a = ap.parse_args()
    if a.make_text:
        make_text(a.make_text)
        return
    if not a.gguf:
        ap.error("--gguf is required")
    engines = a.engines.split(",")
    types = a.types.split(",")
    if a.kl:
        print("| depth | cache k/v | mlstack mean KL | mlstack top-1 | llama.cpp mean KLD | llama.cpp same top |")
        print("|---|---|---|---|---|---|")
        with tempfile.TemporaryDirectory() as work:
            for n in [int(x) for x in a.depths.split(",")]:
                nan = (float("nan"), float("nan"))
                peer = peer_kl(a, n, types, work) if "llama.cpp" in engines else {t: nan for t in types}
                for t in types:
                    kl, top = ours_kl(a, n, t) if "mlstack" in engines else nan
                    print("| %d | %s | %.6f | %.2f%% | %.6f | %.2f%% |" % (n, t, kl, top, peer[t][0], peer[t][1]),
                          flush=True)
    if a.bench:
        print("| cache k/v | bytes/token | threads | mlstack tg%d@d%d | llama.cpp | ratio |" % (a.gen, a.depth))
        print("|---|---|---|---|---|---|")
        for th in [int(x) for x in a.threads.split(",")]:
            for t in [x for x in ["f16"] + types if x not in a.skip.split(",")]:
                o, p = ours_tg(a, t, th), peer_tg(a, t, th)
                print("| %s | %d | %d | %.2f | %.2f | %.2fx |" % (t, cache_bytes_per_token(a.gguf, t), th, o, p,
                                                               o / p if p else float("nan")), flush=True)


if __name__ == "__main__":
    main()
