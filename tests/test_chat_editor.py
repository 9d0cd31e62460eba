#!/usr/bin/env python3
"""The chat's line editor on a pseudo-terminal 40 and 80 columns wide: long input that wraps over
several rows, wide (CJK) characters, combining marks and tabs, cursor moves over them, edits in
the middle, and a resize (SIGWINCH) while a long line is being edited.

What the editor writes is played on a small terminal emulator written here (xterm's rules: a
character that does not fit the row wraps to the next one, a wide one too, combining marks join
the cell before them, CSI A/B/C/D/J/K moves and erases; widths from the `wcwidth` package, not from
the editor's own tables). After each step the screen must show the prompt and the text as a
terminal of that width lays it out, and the cursor must stand where the text's cursor is. The
sent message (read back from /save) must be the text as edited. The screens are printed.

    tests/test_chat_editor.py [--mlstack build/mlstack]

Ends with "N passed, N failed[, N skipped]"."""
import argparse
import codecs
import fcntl
import json
import os
import pty
import re
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import termios
import time
import unicodedata

import wcwidth

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli_testlib import ROOT, SMOLLM2, Checks, tiny_model  # noqa: E402

T = Checks()


def cwidth(ch):
    w = wcwidth.wcwidth(ch)
    return 0 if w < 0 else w


class Screen:
    """A terminal of rows x cols: each cell holds its text ("" for the right half of a wide one)."""

    def __init__(self, rows, cols):
        self.rows, self.cols = rows, cols
        self.cells = [[" "] * cols for _ in range(rows)]
        self.y = self.x = 0
        self.pending = False  # the last column was written: the next character wraps first
        self.last = None  # (y, x) of the last cell written (combining marks join it)
        self.tail = ""  # an escape sequence cut by the end of a read, kept for the next

    def resize(self, cols):  # xterm: rows keep their cells (cut or padded), nothing reflows
        self.cells = [(r + [" "] * cols)[:cols] for r in self.cells]
        self.cols = cols
        self.x = min(self.x, cols - 1)
        self.pending = False

    def lf(self):
        if self.y == self.rows - 1:
            self.cells.pop(0)
            self.cells.append([" "] * self.cols)
        else:
            self.y += 1

    def put(self, ch):
        w = cwidth(ch)
        if w == 0:
            if self.last:
                y, x = self.last
                self.cells[y][x] += ch
            return
        if self.pending or self.x + w > self.cols:
            self.x = 0
            self.lf()
            self.pending = False
        self.cells[self.y][self.x] = ch
        if w == 2:
            self.cells[self.y][self.x + 1] = ""
        self.last = (self.y, self.x)
        if self.x + w >= self.cols:
            self.x = self.cols - 1
            self.pending = True
        else:
            self.x += w

    def feed(self, data):
        data, self.tail = self.tail + data, ""
        i = 0
        while i < len(data):
            ch = data[i]
            if ch == "\x1b":
                m = re.compile(r"\x1b\[([?0-9;]*)([A-Za-z~])").match(data, i)
                if not m and re.fullmatch(r"\x1b(\[[?0-9;]*)?", data[i:]):
                    self.tail = data[i:]  # the rest comes with the next read
                    return
                if not m:
                    i += 1
                    continue
                self.csi(m.group(1), m.group(2))
                i = m.end()
                continue
            if ch == "\r":
                self.x, self.pending = 0, False
            elif ch == "\n":
                self.lf()
                self.pending = False
            elif ch == "\b":
                self.x, self.pending = max(0, self.x - 1), False
            elif ch >= " ":
                self.put(ch)
            i += 1

    def csi(self, arg, op):
        if arg.startswith("?"):
            return
        n = int(arg.split(";")[0]) if arg and arg.split(";")[0] else 1
        self.pending = op in "m" and self.pending
        if op == "A":
            self.y = max(0, self.y - n)
        elif op == "B":
            self.y = min(self.rows - 1, self.y + n)
        elif op == "C":
            self.x = min(self.cols - 1, self.x + n)
        elif op == "D":
            self.x = max(0, self.x - n)
        elif op == "K":
            for x in range(self.x, self.cols):
                self.cells[self.y][x] = " "
        elif op == "J":
            if arg in ("", "0"):
                for x in range(self.x, self.cols):
                    self.cells[self.y][x] = " "
                for y in range(self.y + 1, self.rows):
                    self.cells[y] = [" "] * self.cols
            elif arg == "2":
                self.cells = [[" "] * self.cols for _ in range(self.rows)]
        elif op == "H":
            self.y = self.x = 0

    def row_text(self, y):
        return "".join(self.cells[y]).rstrip()

    def dump(self, title):
        lines = [f"{title} ({self.cols} columns; the cursor is the cell marked below its row)"]
        lines.append("+" + "-" * self.cols + "+")
        for y in range(self.rows):
            t = self.row_text(y)
            if not t and y > self.y:
                continue
            cells = "".join(c if c else "" for c in self.cells[y])
            width = sum(max(cwidth(c[0]), 1) if c else 0 for c in self.cells[y])
            lines.append("|" + cells + " " * (self.cols - width) + "|")
            if y == self.y:
                lines.append(" " + " " * self.x + "^")
        lines.append("+" + "-" * self.cols + "+")
        return "\n".join(lines)


def layout(prompt, text, pos, cols):
    """Rows of the prompt and text at this width as xterm lays them out, and the (row, col) of
    the cursor before text[pos]. Newlines show as a mark, tabs as spaces to the next multiple of 8
    (at most to the row's end)."""
    rows, row, col, cur = [[]], 0, 0, None
    for ch, k in [(c, None) for c in prompt] + [(c, k) for k, c in enumerate(text)]:
        disp = "\u23ce" if ch == "\n" else ch
        w = cwidth(disp)
        if ch == "\t":
            w = min(8 - col % 8, cols - col) if col < cols else 8
            disp = " " * w
        if w and col + w > cols:
            rows.append([])
            row, col = row + 1, 0
            if ch == "\t":
                w, disp = 8, " " * 8
        if k == pos:
            cur = (row, col)
        if w == 0 and rows[row]:
            rows[row][-1] += disp
        else:
            rows[row].append(disp)
        col += w
    if cur is None:
        cur = (row, col)
    if cur[1] >= cols:
        cur = (cur[0] + 1, 0)
    return ["".join(r).rstrip() for r in rows], cur


class Pty:
    def __init__(self, argv, cols, rows=24):
        self.master, slave = pty.openpty()
        self.set_size(rows, cols, slave)
        env = dict(os.environ, TERM="xterm")
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True,
                                     start_new_session=True,
                                     preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
        os.close(slave)
        self.raw = ""
        self.screen = Screen(rows, cols)
        self.utf8 = codecs.getincrementaldecoder("utf-8")("replace")  # a character cut by a read waits

    def set_size(self, rows, cols, fd=None):
        fcntl.ioctl(self.master if fd is None else fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def send(self, s):
        os.write(self.master, s.encode())

    def pump(self, until=None, timeout=60, quiet=0.3):
        """Reads output into the screen until the regex `until` is in the raw text read by this
        call (or, without one, until something came and then nothing for `quiet` seconds)."""
        deadline, got, last = time.time() + timeout, "", time.time()
        while time.time() < deadline:
            r, _, _ = select.select([self.master], [], [], 0.05)
            if r:
                try:
                    raw = os.read(self.master, 65536)
                except OSError:
                    raw = b""
                if not raw:
                    break
                data = self.utf8.decode(raw)
                self.raw += data
                got += data
                self.screen.feed(data)
                last = time.time()
                if until and re.search(until, got):
                    return got
            elif not until and got and time.time() - last >= quiet:  # drawn (something came), then quiet
                return got
        return got if not until else None

    def close(self):
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        os.close(self.master)


def check_screen(p, top, text, pos, what):
    """The edit area starts at screen row `top`: it must show layout(...) and hold the cursor."""
    want, (cy, cx) = layout("> ", text, pos, p.screen.cols)
    got = [p.screen.row_text(top + i) for i in range(len(want))]
    below = [p.screen.row_text(y) for y in range(top + len(want), p.screen.rows)]
    ok = got == want and not any(below) and (p.screen.y, p.screen.x) == (top + cy, cx)
    T.check(ok, f"{what} ({p.screen.cols} columns)",
            f"want rows {want} cursor {(top + cy, cx)}; got rows {got} (below: {[b for b in below if b]}) "
            f"cursor {(p.screen.y, p.screen.x)}")
    return ok


def session(exe, model, cols, tmp):
    """Types, moves, edits and resizes at `cols` columns; returns the screens printed."""
    shots = []
    save = os.path.join(tmp, f"conv{cols}.json")
    p = Pty([exe, "chat", "-m", model, "-n", "2", "--seed", "1"], cols)
    T.check(p.pump(r"> ") is not None, f"chat prompt ({cols} columns)", p.raw[-200:])
    top = p.screen.y
    # a long line: words, wide CJK characters (one lands on the row's edge), combining marks, a tab
    text = ("The quick brown fox jumps over the lazy dog; " "日本語の文字は二つの列を使います。"
            " cafe\u0301 na\u0308ive\ttab, and more words to wrap the line again " "한국어 テキスト end")
    p.send(text)
    p.pump()
    check_screen(p, top, text, len(text), "long line typed: wrapped rows, cursor at the end")
    shots.append(p.screen.dump(f"typed {len(text)} characters"))
    # to the start, then right over 50 characters (wide ones and marks count as one each)
    p.send("\x01")
    p.pump()
    check_screen(p, top, text, 0, "Ctrl-A: the cursor at the start")
    clusters = [m.start() for m in re.finditer(r".[\u0300-\u036f]*", text, re.S)]
    p.send("\x1b[C" * 50)
    p.pump()
    pos = clusters[50]
    check_screen(p, top, text, pos, "50 x right arrow: the cursor on the 50th character, past wide ones")
    # insert wide characters in the middle, delete one before the cursor
    p.send("中文")
    p.pump()
    text = text[:pos] + "中文" + text[pos:]
    pos += 2
    check_screen(p, top, text, pos, "wide characters inserted in the middle: the rest rewraps")
    p.send("\x7f")
    p.pump()
    text = text[:pos - 1] + text[pos:]
    pos -= 1
    check_screen(p, top, text, pos, "backspace over a wide character")
    # over a combining mark: the cursor steps over e + U+0301 as one character
    i = text.index("cafe\u0301")
    clusters = [m.start() for m in re.finditer(r".[\u0300-\u036f]*", text, re.S)]
    p.send("\x05" + "\x1b[D" * sum(1 for c in clusters if c >= i + 5))
    p.pump()
    check_screen(p, top, text, i + 5, "left arrow from the end back to after a combining mark")
    p.send("\x1b[D")
    p.pump()
    check_screen(p, top, text, i + 3, "one more left: before e + U+0301 (one step over the pair)")
    shots.append(p.screen.dump("edited, cursor before e + U+0301"))
    # the terminal resized while editing: the line is drawn again at the new width
    other = 80 if cols == 40 else 40
    p.set_size(24, other)
    p.screen.resize(other)
    p.pump()
    check_screen(p, top, text, i + 3, f"resized from {cols} to {other} columns: drawn again, cursor kept")
    shots.append(p.screen.dump(f"after a resize to {other} columns"))
    p.set_size(24, cols)
    p.screen.resize(cols)
    p.pump()
    check_screen(p, top, text, i + 3, f"resized back to {cols} columns")
    p.send("\r")
    T.check(p.pump(r"reused from the cache") is not None, f"the edited line is sent ({cols} columns)", p.raw[-300:])
    p.pump(r"> ")
    p.send(f"/save {save}\r")
    p.pump(r"saved \d+ messages")
    p.send("\x04")
    p.close()
    try:
        conv = json.load(open(save))
    except (OSError, ValueError):
        conv = []
    T.check(len(conv) == 2 and conv[0]["content"] == text,
            f"the message sent is the text as edited ({cols} columns)", [c.get("content") for c in conv])
    return shots


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mlstack", default=os.path.join(ROOT, "build", "mlstack"))
    exe = ap.parse_args().mlstack
    if not os.path.exists(os.path.join(SMOLLM2, "tokenizer.json")):
        T.skip("chat editor tests", f"{SMOLLM2} is missing (make model)")
        T.finish()
    # the reference's widths for the characters used (the emulator's): CJK 2, marks 0
    T.check(cwidth("日") == 2 and cwidth("한") == 2 and cwidth("\u0301") == 0 and cwidth("a") == 1
            and unicodedata.combining("\u0308"), "wcwidth: wide 2, combining 0")
    tmp = tempfile.mkdtemp(prefix="mlstack-editor-")
    try:
        tiny = tiny_model(os.path.join(tmp, "tiny"))
        for cols in (40, 80):
            for shot in session(exe, tiny, cols, tmp):
                print(shot)
                print()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    T.finish()


if __name__ == "__main__":
    main()
