#!/usr/bin/env python3
"""A soak test of `mlstack serve` (not part of `make test`: it runs for minutes).

    tools/soak_server.py [--mlstack build/mlstack] [-m models/smollm2-135m-instruct]
                         [--duration 600] [--streams 32] [--rss-slack-mib 160]

It starts the server, records each greedy (and seeded) request's streamed text run alone, then
for --duration seconds drives at once:
  - --streams clients looping over those requests, streamed, checking each text against the
    one recorded alone (batch invariance under load, prefix cache hits included);
  - bad requests: invalid JSON, wrong types, a 4 MB body of 2M values, malformed chunked bodies,
    header floods, raw control bytes in the path, random bytes;
  - slow clients: heads trickled a byte a second from another loopback address, and a stream
    read a few bytes at a time;
  - disconnects: streams dropped after a few events (some with a TCP reset), and clients that
    half-close after their request and must still get the whole answer.
RSS is sampled every second. At the end, with every client gone, it checks: RSS never rose more
than --rss-slack-mib (384: the server's --body-mem budget of 256 MiB for request bodies, plus 128)
above its value after the warm-up, and did not keep growing (the peak of the last third of the
run at most --rss-growth-mib, 48, above the peak before it), every KV page is back (no request
running or queued, no page used outside the prefix cache, none pinned), no connection open but
the one reading /metrics, no body memory held, and no text differed. Prints the RSS curve (min /
max per minute) and a summary; exits 1 if a check failed."""
import argparse
import json
import os
import random
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from cli_testlib import metrics, rss_kib  # noqa: E402


def dechunk(body):
    out, i = b"", 0
    while True:
        j = body.find(b"\r\n", i)
        if j < 0:
            return out, False
        size = int(body[i:j].split(b";")[0] or b"0", 16)
        if size == 0:
            return out, True
        out += body[j + 2:j + 2 + size]
        i = j + 2 + size + 2


def request(port, body, src="127.0.0.1", timeout=300, shut=False):
    """POST /v1/chat/completions; returns (status, head, body bytes as sent, complete)."""
    data = json.dumps(body).encode()
    s = socket.socket()
    s.settimeout(timeout)
    s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    try:
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(data) + data)
        if shut:
            s.shutdown(socket.SHUT_WR)
        out = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
    finally:
        s.close()
    head, _, rest = out.partition(b"\r\n\r\n")
    m = re.match(rb"HTTP/1\.1 (\d+)", head)
    return (int(m.group(1)) if m else 0), head, rest


def stream_text(rest):
    """The content of an SSE answer and whether it ended with [DONE] and the last chunk."""
    body, complete = dechunk(rest)
    text, done = [], False
    for line in body.decode(errors="replace").split("\n"):
        if line == "data: [DONE]":
            done = True
        elif line.startswith("data: {"):
            e = json.loads(line[6:])
            if "error" in e:
                return None, False
            if e.get("choices"):
                text.append(e["choices"][0]["delta"].get("content") or "")
    return "".join(text), done and complete


class Soak:
    def __init__(self, a):
        self.a = a
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.counts = {}
        self.problems = []
        self.rss = []  # (seconds since start, KiB)

    def count(self, what, n=1):
        with self.lock:
            self.counts[what] = self.counts.get(what, 0) + n

    def problem(self, what):
        with self.lock:
            if len(self.problems) < 50:
                self.problems.append(what)
        self.count("problems")

    # ---- clients ----
    def streamer(self, k):
        rng = random.Random(k)
        while not self.stop.is_set():
            i = rng.randrange(len(self.reqs))
            try:
                code, _, rest = request(self.port, dict(self.reqs[i], stream=True))
            except OSError as e:
                self.problem(f"stream client {k}: {e!r}")
                continue
            text, ok = stream_text(rest) if code == 200 else (None, False)
            if code != 200 or not ok:
                self.problem(f"stream client {k}: status {code}, complete {ok}: {rest[-200:]!r}")
            elif text != self.alone[i]:
                self.problem(f"request {i}: {text!r} != alone {self.alone[i]!r}")
                self.count("mismatches")
            else:
                self.count("streams_equal")

    def bad(self, k):
        rng = random.Random(1000 + k)
        model = self.model
        bodies = [
            b"{not json",
            json.dumps({"model": model, "messages": "hi"}).encode(),
            json.dumps({"model": model, "messages": [{"role": "user", "content": "x"}], "max_tokens": "ten"}).encode(),
            b'{"x":[' + b"0," * 1999990 + b'0]}',
            json.dumps({"model": model, "prompt": list(range(300000))}).encode(),
            bytes(rng.randrange(256) for _ in range(300)),
        ]
        raws = [
            b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
            b"GET /health HTTP/1.1\r\nHost: x\r\n" + b"X-Flood: aaaaaaaaaaaaaaaa\r\n" * 2000 + b"\r\n",
            b"GET /\x1b[31m\xff\xfe HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n",
            b"garbage\r\n\r\n",
        ]
        while not self.stop.is_set():
            try:
                s = socket.create_connection(("127.0.0.1", self.port), timeout=30)
                if rng.random() < 0.6:
                    body = rng.choice(bodies)
                    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n"
                              b"Connection: close\r\n\r\n" % len(body) + body)
                else:
                    s.sendall(rng.choice(raws))
                s.shutdown(socket.SHUT_WR)
                resp = b""
                while True:
                    b = s.recv(65536)
                    if not b:
                        break
                    resp += b
                s.close()
                m = re.match(rb"HTTP/1\.1 (\d+)", resp)
                code = int(m.group(1)) if m else 0
                if code in (200, 500) or code == 0:
                    self.problem(f"bad request answered {code}: {resp[:120]!r}")
                self.count(f"bad_{code}")
            except OSError:
                self.count("bad_reset")  # a 413 before the body was sent may end in a reset
            time.sleep(rng.random() * 0.2)

    def slowloris(self, k):
        while not self.stop.is_set():
            try:
                s = socket.socket()
                s.settimeout(15)
                s.bind(("127.0.0.2", 0))
                s.connect(("127.0.0.1", self.port))
                self.count("slow_conns")
                for ch in b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n" * 10:
                    if self.stop.wait(1.0):
                        break
                    s.sendall(bytes([ch]))
                s.close()
            except OSError:
                self.count("slow_closed")

    def slow_reader(self, k):
        rng = random.Random(2000 + k)
        while not self.stop.is_set():
            i = rng.randrange(len(self.reqs))
            data = json.dumps(dict(self.reqs[i], stream=True)).encode()
            try:
                s = socket.create_connection(("127.0.0.1", self.port), timeout=60)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n"
                          b"Connection: close\r\n\r\n" % len(data) + data)
                out = b""
                while True:
                    b = s.recv(64)
                    if not b:
                        break
                    out += b
                    time.sleep(0.02)
                s.close()
                text, ok = stream_text(out.partition(b"\r\n\r\n")[2])
                if not ok or text != self.alone[i]:
                    self.problem(f"slow reader: complete {ok}, {text!r} vs {self.alone[i]!r}")
                else:
                    self.count("slow_reads_equal")
            except OSError as e:
                self.problem(f"slow reader: {e!r}")

    def dropper(self, k):
        rng = random.Random(3000 + k)
        while not self.stop.is_set():
            body = {"model": self.model, "messages": [{"role": "user", "content": "Tell me a long story."}],
                    "max_tokens": 400, "temperature": 0.7, "seed": rng.randrange(1000), "stream": True}
            data = json.dumps(body).encode()
            try:
                s = socket.create_connection(("127.0.0.1", self.port), timeout=60)
                s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(data)
                          + data)
                got, want = b"", rng.randrange(1, 12)
                while got.count(b"data: ") < want:
                    b = s.recv(65536)
                    if not b:
                        break
                    got += b
                if rng.random() < 0.5:  # a reset instead of an orderly close
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                s.close()
                self.count("dropped")
            except OSError as e:
                self.problem(f"dropper: {e!r}")
            time.sleep(rng.random() * 0.5)

    def half_closer(self, k):
        rng = random.Random(4000 + k)
        while not self.stop.is_set():
            i = rng.randrange(len(self.reqs))
            try:
                code, _, rest = request(self.port, self.reqs[i], shut=True)
                text = json.loads(rest)["choices"][0]["message"]["content"] if code == 200 else None
                if text != self.alone[i]:
                    self.problem(f"half-close: {code} {text!r} vs {self.alone[i]!r}")
                else:
                    self.count("half_close_equal")
            except (OSError, ValueError, KeyError) as e:
                self.problem(f"half-close: {e!r}")
            time.sleep(rng.random())

    def sampler(self):
        while not self.stop.wait(1.0):
            self.rss.append((time.time() - self.t0, rss_kib(self.proc.pid)))

    # ---- the run ----
    def run(self):
        a = self.a
        self.model = os.path.basename(a.model.rstrip("/"))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.log = tempfile.NamedTemporaryFile(prefix="mlstack-soak-", suffix=".log", delete=False)
        self.proc = subprocess.Popen([a.mlstack, "serve", "-m", a.model, "--port", str(self.port), "--quiet",
                                      "--parallel", str(a.parallel), *a.serve_args], stdout=self.log,
                                     stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{self.port}"
        for _ in range(600):
            try:
                urllib.request.urlopen(base + "/health", timeout=2).read()
                break
            except OSError:
                if self.proc.poll() is not None:
                    sys.exit("the server exited at start")
                time.sleep(0.2)
        topics = ["the sea", "a city at night", "prime numbers", "coffee", "a lost key", "the moon", "trains",
                  "a red door", "winter", "bread", "a library", "thunder", "a violin", "the desert", "bees", "clocks"]
        self.reqs = []
        for i, t in enumerate(topics):
            sys_msg = "You are a helpful assistant." if i % 2 else "You answer in one short paragraph."
            self.reqs.append({"model": self.model, "max_tokens": a.max_tokens, "temperature": 0.0 if i % 4 else 0.8,
                              "seed": i, "messages": [{"role": "system", "content": sys_msg},
                                                      {"role": "user", "content": f"Write two sentences about {t}."}]})
        t = time.time()
        self.alone = []
        for r in self.reqs:  # each request alone, streamed, twice: the engine must agree with itself
            texts = [stream_text(request(self.port, dict(r, stream=True))[2])[0] for _ in range(2)]
            if texts[0] != texts[1]:
                self.problem(f"alone twice differs: {texts}")
            self.alone.append(texts[0])
        print(f"recorded {len(self.reqs)} requests alone in {time.time() - t:.1f} s", flush=True)
        time.sleep(1)
        rss_warm = rss_kib(self.proc.pid)
        self.t0 = time.time()
        ths = [threading.Thread(target=self.sampler, daemon=True)]
        ths += [threading.Thread(target=self.streamer, args=(k,), daemon=True) for k in range(a.streams)]
        ths += [threading.Thread(target=self.bad, args=(k,), daemon=True) for k in range(3)]
        ths += [threading.Thread(target=self.slowloris, args=(k,), daemon=True) for k in range(8)]
        ths += [threading.Thread(target=self.slow_reader, args=(k,), daemon=True) for k in range(2)]
        ths += [threading.Thread(target=self.dropper, args=(k,), daemon=True) for k in range(3)]
        ths += [threading.Thread(target=self.half_closer, args=(k,), daemon=True) for k in range(2)]
        for th in ths:
            th.start()
        last = time.time()
        while time.time() - self.t0 < a.duration:
            time.sleep(5)
            if time.time() - last >= 60:
                last = time.time()
                with self.lock:
                    c = dict(self.counts)
                print(f"  {time.time() - self.t0:5.0f} s RSS {rss_kib(self.proc.pid) >> 10} MiB "
                      f"streams {c.get('streams_equal', 0)} mismatches {c.get('mismatches', 0)} "
                      f"problems {c.get('problems', 0)}", flush=True)
            if self.proc.poll() is not None:
                self.problem(f"the server exited: {self.proc.returncode}")
                break
        self.stop.set()
        for th in ths:
            th.join(120)
        # everything back?
        ok_pages, m = False, {}
        for _ in range(100):
            m = metrics(base)
            ok_pages = (m["mlstack_requests_running"] == 0 and m["mlstack_requests_queued"] == 0
                        and m["mlstack_kv_pages_used"] == m["mlstack_kv_pages_cached"]
                        and m["mlstack_kv_pages_pinned"] == 0 and m["mlstack_connections_open"] == 1
                        and m["mlstack_body_memory_bytes"] == 0)
            if ok_pages:
                break
            time.sleep(0.2)
        if not ok_pages:
            self.problem("not everything came back: " + json.dumps(
                {k: v for k, v in m.items() if "pages" in k or "requests_" in k or "connections_open" in k
                 or "body_memory" in k}))
        rss_vals = [v for _, v in self.rss] or [0]
        peak = max(rss_vals)
        bound = rss_warm + a.rss_slack_mib * 1024
        if peak > bound:
            self.problem(f"RSS peak {peak >> 10} MiB over the bound {bound >> 10} MiB (warm {rss_warm >> 10} + "
                         f"{a.rss_slack_mib})")
        early = [r for t_, r in self.rss if t_ < a.duration * 2 / 3] or [0]
        late = [r for t_, r in self.rss if t_ >= a.duration * 2 / 3] or [0]
        if max(late) > max(early) + a.rss_growth_mib * 1024:
            self.problem(f"RSS still growing: peak {max(early) >> 10} MiB in the first two thirds, "
                         f"{max(late) >> 10} MiB in the last")
        self.proc.send_signal(signal.SIGTERM)
        t = time.time()
        try:
            rc = self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = "killed"
        if rc != 0:
            self.problem(f"exit status {rc} after SIGTERM")
        # report
        print("\nRSS over time (MiB), per minute: min / max")
        for minute in range(int(a.duration // 60) + 1):
            v = [r for t_, r in self.rss if minute * 60 <= t_ < (minute + 1) * 60]
            if v:
                print(f"  minute {minute:2d}: {min(v) / 1024:7.1f} / {max(v) / 1024:7.1f}")
        print(f"RSS after warm-up {rss_warm / 1024:.1f} MiB; during the soak min {min(rss_vals) / 1024:.1f}, "
              f"max {peak / 1024:.1f} MiB (bound {bound / 1024:.1f}); SIGTERM exit in {time.time() - t:.2f} s")
        print("final: " + json.dumps({k: m.get(k) for k in (
            "mlstack_kv_pages_total", "mlstack_kv_pages_used", "mlstack_kv_pages_cached", "mlstack_kv_pages_pinned",
            "mlstack_requests_running", "mlstack_requests_queued", "mlstack_connections_open",
            "mlstack_body_memory_bytes", "mlstack_requests_cancelled_total", "mlstack_connections_evicted_total",
            "mlstack_completion_tokens_total", "mlstack_preemptions_total")}))
        print("counts: " + json.dumps(dict(sorted(self.counts.items()))))
        for p in self.problems[:20]:
            print("PROBLEM:", p)
        os.unlink(self.log.name)
        print("soak: " + ("FAILED" if self.problems else "passed"))
        return 1 if self.problems else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mlstack", default=os.path.join(ROOT, "build", "mlstack"))
    ap.add_argument("-m", "--model", default=os.path.join(ROOT, "models", "smollm2-135m-instruct"))
    ap.add_argument("--duration", type=float, default=600)
    ap.add_argument("--streams", type=int, default=32)
    ap.add_argument("--parallel", type=int, default=16)
    ap.add_argument("--max-tokens", type=int, default=24)
    ap.add_argument("--rss-slack-mib", type=int, default=384,
                    help="the most RSS may rise above its value after the warm-up (default 384)")
    ap.add_argument("--rss-growth-mib", type=int, default=48,
                    help="the most the last third's RSS peak may exceed the earlier peak (default 48)")
    ap.add_argument("serve_args", nargs="*", help="more options for mlstack serve (after --)")
    sys.exit(Soak(ap.parse_args()).run())


if __name__ == "__main__":
    main()
