"""Shared helpers for the Python tests of the mlstack CLI and server (tests/test_cli.py,
tests/test_server.py): a check counter that ends with the runner's summary line, a tiny
random-weight model that uses SmolLM2's real tokenizer and chat template (fast enough for
sanitizer builds; its text is noise), and a server process wrapper."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SMOLLM2 = os.path.join(ROOT, "models", "smollm2-135m-instruct")


class Checks:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0

    def check(self, cond, what, detail=""):
        if cond:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAIL: {what}" + (f": {detail}" if detail else ""), flush=True)
        return cond

    def skip(self, what, why):
        self.skipped += 1
        print(f"SKIP: {what}: {why}", flush=True)

    def finish(self):
        line = f"{self.passed} passed, {self.failed} failed"
        if self.skipped:
            line += f", {self.skipped} skipped"
        print(line, flush=True)
        sys.exit(1 if self.failed else 0)


def tiny_model(dirname, vocab=49152, ctx=4096):
    """A 2-layer llama with random weights and SmolLM2's tokenizer files, in dirname."""
    import numpy as np
    from safetensors.numpy import save_file
    os.makedirs(dirname, exist_ok=True)
    h, ff, layers, heads, kv, hd = 64, 128, 2, 4, 2, 16
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": h,
           "intermediate_size": ff, "num_hidden_layers": layers, "num_attention_heads": heads,
           "num_key_value_heads": kv, "head_dim": hd, "vocab_size": vocab,
           "max_position_embeddings": ctx, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
           "tie_word_embeddings": True, "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu"}
    with open(os.path.join(dirname, "config.json"), "w") as f:
        json.dump(cfg, f)
    rng = np.random.default_rng(7)
    t = {"model.embed_tokens.weight": rng.normal(0, 0.5, (vocab, h)).astype(np.float32),
         "model.norm.weight": np.ones(h, np.float32)}
    for i in range(layers):
        p = f"model.layers.{i}."
        for name, shape in (("self_attn.q_proj", (heads * hd, h)), ("self_attn.k_proj", (kv * hd, h)),
                            ("self_attn.v_proj", (kv * hd, h)), ("self_attn.o_proj", (h, heads * hd)),
                            ("mlp.gate_proj", (ff, h)), ("mlp.up_proj", (ff, h)), ("mlp.down_proj", (h, ff))):
            t[p + name + ".weight"] = rng.normal(0, 0.1, shape).astype(np.float32)
        t[p + "input_layernorm.weight"] = np.ones(h, np.float32)
        t[p + "post_attention_layernorm.weight"] = np.ones(h, np.float32)
    save_file(t, os.path.join(dirname, "model.safetensors"))
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(SMOLLM2, name), os.path.join(dirname, name))
    return dirname


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Server:
    """mlstack serve in the background; stop() sends SIGTERM and returns (exit code, stderr)."""

    def __init__(self, exe, model, *args, env=None, start_timeout=180):
        self.port = free_port()
        self.log = tempfile.NamedTemporaryFile(prefix="mlstack-serve-", suffix=".log", delete=False)
        e = dict(os.environ)
        e.update(env or {})
        self.proc = subprocess.Popen([exe, "serve", "-m", model, "--port", str(self.port), *args],
                                     stdout=self.log, stderr=subprocess.STDOUT, env=e)
        self.base = f"http://127.0.0.1:{self.port}"
        deadline = time.time() + start_timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("server exited at start:\n" + self.output())
            try:
                with urllib.request.urlopen(self.base + "/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except Exception:
                time.sleep(0.2)
        raise RuntimeError("server did not start:\n" + self.output())

    def output(self):
        with open(self.log.name, "r", errors="replace") as f:
            return f.read()

    def stop(self, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
            rc = "killed after timeout"
        out = self.output()
        os.unlink(self.log.name)
        return rc, out


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def metrics(base, headers=None):
    req = urllib.request.Request(base + "/metrics", headers=headers or {})
    with urllib.request.urlopen(req, timeout=30) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        m = re.match(r"^([a-z_]+(?:\{[^}]*\})?) (\S+)$", line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def sanitizer_errors(text):
    return [l for l in text.splitlines() if "runtime error" in l or "Sanitizer" in l or "LeakSanitizer" in l]
