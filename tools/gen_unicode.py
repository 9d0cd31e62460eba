#!/usr/bin/env python3
"""Regenerates the Unicode tables inside mlstack.h (its last section, >>unicodetables) from the Unicode Character Database.

Usage: python3 tools/gen_unicode.py [--ucd DIR] [--norm-version 9.0] [--header mlstack.h]

DIR defaults to /usr/share/unicode (Debian package `unicode-data`). The text between the markers
"BEGIN GENERATED unicode tables" and "END GENERATED unicode tables" is replaced in place.

Two Unicode versions are involved on purpose:
- general categories, White_Space, Alphabetic, case mappings and case folding come from the UCD as
  given (onig, which Hugging Face tokenizers uses for Split regexes, follows current Unicode);
- normalization data (decompositions, combining classes, compositions) and the mark set used by
  StripAccents are cut at --norm-version, because Hugging Face tokenizers normalizes with the
  `unicode-normalization-alignments` crate, whose tables are Unicode 9.0. Characters assigned later
  pass through its NFC/NFD/NFKC/NFKD unchanged, and we must do the same to stay byte-exact.
"""
import argparse, os, re, sys

CATS = ['Lu', 'Ll', 'Lt', 'Lm', 'Lo', 'Mn', 'Mc', 'Me', 'Nd', 'Nl', 'No', 'Pc', 'Pd', 'Ps', 'Pe',
        'Pi', 'Pf', 'Po', 'Sm', 'Sc', 'Sk', 'So', 'Zs', 'Zl', 'Zp', 'Cc', 'Cf', 'Cs', 'Co', 'Cn']
NCP = 0x110000


def parse_ranges(path, want=None):
    """Yields (lo, hi, fields) for each data line of a UCD property file."""
    for line in open(path, encoding='utf-8'):
        line = line.split('#')[0].strip()
        if not line:
            continue
        f = [x.strip() for x in line.split(';')]
        if '..' in f[0]:
            lo, hi = (int(x, 16) for x in f[0].split('..'))
        else:
            lo = hi = int(f[0], 16)
        if want is None or f[1] == want:
            yield lo, hi, f


def vkey(v):
    return tuple(int(x) for x in v.split('.'))


def load(ucd, norm_version):
    cat = [CATS.index('Cn')] * NCP
    dec = {}
    ccc = {}
    lower = {}
    upper = {}
    first = None
    for line in open(os.path.join(ucd, 'UnicodeData.txt'), encoding='utf-8'):
        f = line.rstrip('\n').split(';')
        cp = int(f[0], 16)
        c = CATS.index(f[2])
        if f[1].endswith(', First>'):
            first = cp
            continue
        if f[1].endswith(', Last>'):
            for x in range(first, cp + 1):
                cat[x] = c
            continue
        cat[cp] = c
        if f[3] != '0':
            ccc[cp] = int(f[3])
        if f[5]:
            d = f[5].split()
            compat = d[0].startswith('<')
            if compat:
                d = d[1:]
            dec[cp] = (compat, [int(x, 16) for x in d])
        if f[13]:
            lower[cp] = int(f[13], 16)
        if f[12]:
            upper[cp] = int(f[12], 16)
    age = [None] * NCP
    for lo, hi, f in parse_ranges(os.path.join(ucd, 'DerivedAge.txt')):
        for x in range(lo, hi + 1):
            age[x] = f[1]
    nv = vkey(norm_version)
    old = lambda x: age[x] is not None and vkey(age[x]) <= nv
    dec = {k: v for k, v in dec.items() if old(k)}
    ccc_n = {k: v for k, v in ccc.items() if old(k)}
    ws = set()
    for lo, hi, f in parse_ranges(os.path.join(ucd, 'PropList.txt'), 'White_Space'):
        ws.update(range(lo, hi + 1))
    alpha = set()
    for lo, hi, f in parse_ranges(os.path.join(ucd, 'DerivedCoreProperties.txt'), 'Alphabetic'):
        alpha.update(range(lo, hi + 1))
    excl = set()
    for lo, hi, f in parse_ranges(os.path.join(ucd, 'DerivedNormalizationProps.txt'), 'Full_Composition_Exclusion'):
        excl.update(range(lo, hi + 1))
    fold = {}
    for line in open(os.path.join(ucd, 'CaseFolding.txt'), encoding='utf-8'):
        line = line.split('#')[0].strip()
        if not line:
            continue
        f = [x.strip() for x in line.split(';')]
        if f[1] in ('C', 'S'):
            fold[int(f[0], 16)] = int(f[2], 16)
    special_lower = {}
    for line in open(os.path.join(ucd, 'SpecialCasing.txt'), encoding='utf-8'):
        line = line.split('#')[0].strip()
        if not line:
            continue
        f = [x.strip() for x in line.split(';')]
        if len(f) >= 5 and f[4]:
            continue  # conditional mappings (final sigma, locales) are not context-free
        lo = [int(x, 16) for x in f[1].split()]
        if len(lo) > 1:
            special_lower[int(f[0], 16)] = lo
    marks = [x for x in range(NCP) if CATS[cat[x]] in ('Mn', 'Mc', 'Me') and old(x)]
    return dict(cat=cat, dec=dec, ccc=ccc_n, lower=lower, upper=upper, ws=ws, alpha=alpha,
                excl=excl, fold=fold, special_lower=special_lower, marks=marks, age=age)


def two_level(values, shift):
    bs = 1 << shift
    blocks = {}
    stage1 = []
    stage2 = []
    for i in range(0, NCP, bs):
        b = tuple(values[i:i + bs])
        if b not in blocks:
            blocks[b] = len(blocks)
            stage2.extend(b)
        stage1.append(blocks[b])
    return stage1, stage2


def runs(mapping):
    """Case map as runs (start, count, step, delta): cp start + k*step maps to itself + delta."""
    keys = sorted(mapping)
    out = []
    i = 0
    while i < len(keys):
        s = keys[i]
        d = mapping[s] - s
        best = (1, 1)
        for step in (1, 2):
            n = 1
            while i + n < len(keys) and keys[i + n] == s + n * step and mapping[keys[i + n]] - keys[i + n] == d:
                n += 1
            if n > best[0]:
                best = (n, step)
        out.append((s, best[0], best[1], d))
        i += best[0]
    return out


def full_decomp(dec, cp, compat):
    if cp not in dec:
        return [cp]
    is_compat, d = dec[cp]
    if is_compat and not compat:
        return [cp]
    r = []
    for x in d:
        r.extend(full_decomp(dec, x, compat))
    return r


def fmt_array(ctype, name, items, per_line=16):
    lines = ['static const %s %s[%d] = {' % (ctype, name, len(items))]
    for i in range(0, len(items), per_line):
        lines.append('    ' + ','.join(str(x) for x in items[i:i + per_line]) + ',')
    lines.append('};')
    return lines


def generate(u, args):
    out = []
    nbytes = 0
    # Properties: one byte per code point through a two-level table.
    prop = [u['cat'][x] | (0x20 if x in u['ws'] else 0) | (0x40 if x in u['alpha'] else 0) for x in range(NCP)]
    best = None
    for shift in range(4, 10):
        s1, s2 = two_level(prop, shift)
        size = len(s1) * (1 if max(s1) < 256 else 2) + len(s2)
        if best is None or size < best[0]:
            best = (size, shift, s1, s2)
    size, shift, s1, s2 = best
    t1 = 'uint8_t' if max(s1) < 256 else 'uint16_t'
    out.append('#define MLSTACK__UPROP_SHIFT %d' % shift)
    out += fmt_array(t1, 'mlstack__uprop1', s1, 32)
    out += fmt_array('uint8_t', 'mlstack__uprop2', s2, 32)
    nbytes += size
    sizes = ['properties %d' % size]

    def emit_runs(name, mapping):
        r = runs(mapping)
        flat = []
        for s, n, step, d in r:
            flat += [s, n | ((step - 1) << 15), d]
        out.append('/* %s: %d runs of {first code point, count | (step-1) << 15, delta} */' % (name, len(r)))
        out.extend(fmt_array('int32_t', name, flat, 12))
        return len(flat) * 4

    b = emit_runs('mlstack__ulower_runs', u['lower'])
    b += emit_runs('mlstack__uupper_runs', u['upper'])
    b += emit_runs('mlstack__ufold_runs', u['fold'])
    nbytes += b
    sizes.append('case %d' % b)
    sl = []
    for cp, m in sorted(u['special_lower'].items()):
        assert len(m) <= 3
        sl += [cp] + m + [0] * (3 - len(m))
    out.extend(fmt_array('uint32_t', 'mlstack__ulower_special', sl, 8))
    nbytes += len(sl) * 4

    # Marks as of the normalization version (StripAccents), as ranges.
    mr = []
    for x in u['marks']:
        if mr and mr[-1][1] == x - 1:
            mr[-1][1] = x
        else:
            mr.append([x, x])
    out.extend(fmt_array('uint32_t', 'mlstack__umark_ranges', [v for r in mr for v in r], 12))
    nbytes += len(mr) * 8

    # Combining classes as ranges {first, last, class}.
    cr = []
    for x in sorted(u['ccc']):
        c = u['ccc'][x]
        if cr and cr[-1][1] == x - 1 and cr[-1][2] == c:
            cr[-1][1] = x
        else:
            cr.append([x, x, c])
    out.extend(fmt_array('uint32_t', 'mlstack__uccc_ranges', [v for r in cr for v in r], 12))
    nbytes += len(cr) * 12
    n_norm = len(cr) * 12

    # Full decompositions: sorted keys (code point << 1 | compat-only); entry i spans
    # pool[off[i] .. off[i+1]) in UTF-16 (surrogate pairs for code points above U+FFFF).
    pool = []
    keys = []
    offs = []
    def put(seq):
        for x in seq:
            if x >= 0x10000:
                x -= 0x10000
                pool.extend([0xD800 | (x >> 10), 0xDC00 | (x & 0x3FF)])
            else:
                pool.append(x)
    for cp in sorted(u['dec']):
        c = full_decomp(u['dec'], cp, False)
        k = full_decomp(u['dec'], cp, True)
        if c != [cp]:
            keys.append(cp << 1)
            offs.append(len(pool))
            put(c)
        if k != c:
            keys.append(cp << 1 | 1)
            offs.append(len(pool))
            put(k)
    offs.append(len(pool))
    assert len(pool) < 65536
    out.append('/* decompositions: %d entries */' % len(keys))
    out.extend(fmt_array('uint32_t', 'mlstack__udecomp_keys', keys, 12))
    out.extend(fmt_array('uint16_t', 'mlstack__udecomp_off', offs, 16))
    out.extend(fmt_array('uint16_t', 'mlstack__udecomp_pool', pool, 16))
    n_norm += len(keys) * 4 + len(offs) * 2 + len(pool) * 2

    # Primary composites: sorted {first, second, composite}.
    comp = []
    for cp, (compat, d) in u['dec'].items():
        if compat or len(d) != 2 or cp in u['excl']:
            continue
        assert d[1] >= 0x300  # the NFC quick check relies on this
        comp.append((d[0], d[1], cp))
    comp.sort()
    out.extend(fmt_array('uint32_t', 'mlstack__ucomp', [v for r in comp for v in r], 12))
    n_norm += len(comp) * 12
    nbytes += n_norm
    sizes.append('normalization %d' % n_norm)
    head = ['/* Generated by tools/gen_unicode.py from the Unicode %s Character Database (normalization data'
            ' cut at Unicode %s). %d bytes: %s. */' % (args.ucd_version, args.norm_version, nbytes, ', '.join(sizes))]
    return head + out, nbytes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--ucd', default='/usr/share/unicode')
    ap.add_argument('--norm-version', default='9.0')
    ap.add_argument('--header', default=os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'mlstack.h'))
    args = ap.parse_args()
    m = re.search(r'DerivedAge-(\d+\.\d+\.\d+)', open(os.path.join(args.ucd, 'DerivedAge.txt'), encoding='utf-8').read(400))
    args.ucd_version = m.group(1) if m else 'unknown'
    u = load(args.ucd, args.norm_version)
    lines, nbytes = generate(u, args)
    text = open(args.header, encoding='utf-8').read()
    begin = '/* BEGIN GENERATED unicode tables */\n'
    end = '/* END GENERATED unicode tables */\n'
    i = text.index(begin) + len(begin)
    j = text.index(end)
    text = text[:i] + '\n'.join(lines) + '\n' + text[j:]
    open(args.header, 'w', encoding='utf-8').write(text)
    print('Unicode %s, normalization %s: %d bytes of tables' % (args.ucd_version, args.norm_version, nbytes))


if __name__ == '__main__':
    main()
