#!/usr/bin/env python3
"""Load test for OpenAI-compatible servers: N concurrent streaming chat clients, the same script
for mlstack serve and llama.cpp's llama-server.

    tools/bench_serve.py --url http://127.0.0.1:8080 [--model ID] [--clients 1,8,32] [--tokens 64]
                         [--requests-per-client 2] [--json-out FILE]
    tools/bench_serve.py --spawn mlstack    # starts build/mlstack serve on SmolLM2 (--quant q4_1)
    tools/bench_serve.py --spawn llama      # starts peer/bin/llama-server on a GGUF (--gguf FILE)

Each client sends --requests-per-client requests one after another: a chat request with a
different short question (so prompts share the template's prefix but not the question), greedy,
"ignore_eos": true and max_tokens --tokens, so both servers generate exactly the same number of
tokens. Reported per concurrency level:
  aggregate tokens/s  completion tokens of all requests / wall time from the first send to the
                      last finished request
  per-client tokens/s mean over requests of (tokens - 1) / (last token time - first token time)
  TTFT p50 / p99      time from sending a request to its first content chunk, over all requests
Stdlib only (http.client); the client runs on the same machine, so it takes a little CPU from
both servers alike."""
import argparse
import http.client
import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUESTIONS = ["Tell me about the ocean.", "How do airplanes fly?", "Describe a forest in spring.",
             "What is a prime number?", "Explain how rain forms.", "Write about a city at night.",
             "Why is the sky blue?", "What do bees do all day?"]


def one_request(url, model, i, tokens, out):
    u = urllib.parse.urlparse(url)
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": QUESTIONS[i % len(QUESTIONS)] + f" ({i})"}],
                       "max_tokens": tokens, "temperature": 0, "ignore_eos": True, "stream": True,
                       "stream_options": {"include_usage": True}})
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=600)
    t0 = time.time()
    conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
    r = conn.getresponse()
    if r.status != 200:
        raise RuntimeError(f"HTTP {r.status}: {r.read()[:300]!r}")
    t_first = t_last = None
    chunks = usage = 0
    while True:
        line = r.readline()
        if not line:
            break
        line = line.strip()
        if not line.startswith(b"data: "):
            continue
        data = line[6:]
        if data == b"[DONE]":
            break
        ev = json.loads(data)
        if ev.get("usage"):
            usage = ev["usage"].get("completion_tokens", 0)
        for ch in ev.get("choices") or []:
            if (ch.get("delta") or {}).get("content"):
                t = time.time()
                t_first = t_first or t
                t_last = t
                chunks += 1
    conn.close()
    out.append({"ttft": (t_first or time.time()) - t0, "tokens": usage or chunks, "chunks": chunks,
                "decode_s": (t_last - t_first) if t_first and t_last else 0, "t_end": time.time()})


def level(url, model, clients, tokens, per_client):
    results, errors = [], []

    def client(c):
        for k in range(per_client):
            try:
                one_request(url, model, c * per_client + k, tokens, results)
            except Exception as e:  # noqa: BLE001
                errors.append(repr(e))
    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    t0 = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.time() - t0
    if errors:
        raise RuntimeError(f"{len(errors)} requests failed: {errors[0]}")
    ttft = sorted(r["ttft"] for r in results)

    def pct(p):
        return ttft[min(len(ttft) - 1, int(round(p * (len(ttft) - 1))))]
    per = [(r["tokens"] - 1) / r["decode_s"] for r in results if r["decode_s"] > 0 and r["tokens"] > 1]
    return {"clients": clients, "requests": len(results), "tokens": sum(r["tokens"] for r in results), "wall_s": wall,
            "aggregate_tps": sum(r["tokens"] for r in results) / wall, "per_client_tps": sum(per) / max(1, len(per)),
            "ttft_p50_ms": 1e3 * pct(0.5), "ttft_p99_ms": 1e3 * pct(0.99)}


def wait_ready(url, proc, timeout=300):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc and proc.poll() is not None:
            raise RuntimeError("server exited")
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as r:
                if r.status == 200:
                    return
        except Exception:  # noqa: BLE001
            time.sleep(0.5)
    raise RuntimeError("server not ready")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", default="http://127.0.0.1:8080")
    ap.add_argument("--model", default=None, help="model id to send (default: the first of /v1/models)")
    ap.add_argument("--clients", default="1,8,32")
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--requests-per-client", type=int, default=2)
    ap.add_argument("--spawn", choices=("mlstack", "llama"), help="start the server here (and stop it after)")
    ap.add_argument("--model-dir", default=os.path.join(ROOT, "models", "smollm2-135m-instruct"))
    ap.add_argument("--gguf", default=None, help="--spawn llama: the GGUF file")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--parallel", type=int, default=32)
    ap.add_argument("--server-args", default="", help="extra arguments for the spawned server")
    ap.add_argument("--json-out", default=None)
    a = ap.parse_args()
    proc = None
    if a.spawn:
        port = 18000 + os.getpid() % 1000
        a.url = f"http://127.0.0.1:{port}"
        if a.spawn == "mlstack":
            cmd = [os.path.join(ROOT, "build", "mlstack"), "serve", "-m", a.model_dir, "--port", str(port), "--quant", "q4_1",
                   "-t", str(a.threads), "--parallel", str(a.parallel), "--quiet"]
        else:
            cmd = [os.path.join(ROOT, "peer", "bin", "llama-server"), "-m", a.gguf, "--port", str(port), "-t", str(a.threads),
                   "-np", str(a.parallel), "-c", str(a.parallel * 512), "--cont-batching", "--log-disable"]
        cmd += shlex.split(a.server_args)
        print("#", " ".join(cmd), file=sys.stderr)
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_ready(a.url, proc)
        if not a.model:
            with urllib.request.urlopen(a.url + "/v1/models", timeout=10) as r:
                a.model = json.load(r)["data"][0]["id"]
        level(a.url, a.model, 1, 8, 1)  # warm-up
        rows = []
        for n in (int(x) for x in a.clients.split(",")):
            row = level(a.url, a.model, n, a.tokens, a.requests_per_client)
            rows.append(row)
            print(f"clients {n:3d}: {row['requests']:3d} requests, {row['tokens']:5d} tokens in {row['wall_s']:6.1f} s | "
                  f"aggregate {row['aggregate_tps']:7.1f} t/s | per client {row['per_client_tps']:6.1f} t/s | "
                  f"TTFT p50 {row['ttft_p50_ms']:7.0f} ms p99 {row['ttft_p99_ms']:7.0f} ms", flush=True)
        if a.json_out:
            with open(a.json_out, "w") as f:
                json.dump({"url": a.url, "spawn": a.spawn, "tokens": a.tokens, "rows": rows}, f, indent=1)
    finally:
        if proc:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()


if __name__ == "__main__":
    main()
