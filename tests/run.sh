#!/usr/bin/env bash
# Runs every test binary given, prints their failures and wall seconds, and sums their last lines.
# Ends with "N passed, N failed" (", N skipped" after when any were skipped); exit 1 on any failure.
# TEST_JOBS binaries run at once (default: the number of CPUs plus one, since some tests spend
# much of their time waiting: Wine starting up, a server test's timeouts); results are printed in the order
# given, each as soon as it and every one before it have finished. Two binaries with the same
# name (one test in two flavours) never run at the same time.
set -u
jobs=${TEST_JOBS:-$(($(nproc 2>/dev/null || echo 2) + 1))}
[ "$jobs" -ge 1 ] 2>/dev/null || jobs=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bins=("$@")
passed=0 failed=0 skipped=0 next=0 started=0

# run_one I: runs bins[I]; its output, exit status and seconds go to $tmp/I.{out,rc,secs}
run_one() {
    local t0=$SECONDS rc
    "${bins[$1]}" >"$tmp/$1.out" 2>&1
    rc=$?
    echo $((SECONDS - t0)) >"$tmp/$1.secs"
    echo "$rc" >"$tmp/$1.rc.part" && mv "$tmp/$1.rc.part" "$tmp/$1.rc"
}

# report I: prints bins[I]'s failures and summary row and adds up its counts
report() {
    local bin=${bins[$1]} out rc secs last p f s
    out=$(cat "$tmp/$1.out") rc=$(cat "$tmp/$1.rc") secs=$(cat "$tmp/$1.secs")
    last=$(printf '%s\n' "$out" | tail -n 1)
    if [[ $last =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed(,\ ([0-9]+)\ skipped)?$ ]]; then
        p=${BASH_REMATCH[1]} f=${BASH_REMATCH[2]} s=${BASH_REMATCH[4]:-0}
    else
        p=0 f=1 s=0
        echo "$bin: no summary line (exit $rc)"
    fi
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; echo "$bin: exit status $rc"; fi
    printf '%s\n' "$out" | grep -E 'FAIL|SKIP|ERROR|runtime error|Sanitizer' | head -n 40
    printf '%-40s %5d passed %3d failed %3d skipped %4ds\n' "$(basename "$(dirname "$bin")")/$(basename "$bin")" "$p" "$f" "$s" "$secs"
    passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
}

flush() { # reports every finished binary whose predecessors are all reported
    while [ "$next" -lt ${#bins[@]} ] && [ -e "$tmp/$next.rc" ]; do
        report "$next"
        next=$((next + 1))
    done
}

# busy NAME: whether a started, unfinished binary has this base name (the same test of another
# flavour: tests share scratch paths under build/, so those never run at the same time)
busy() {
    local j
    for ((j = next; j < started; j++)); do
        [ -e "$tmp/$j.rc" ] || [ "$(basename "${bins[$j]}")" != "$1" ] || return 0
    done
    return 1
}

started=0
for i in "${!bins[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ] || busy "$(basename "${bins[$i]}")"; do
        wait -n 2>/dev/null || sleep 0.2
        flush
    done
    run_one "$i" &
    started=$((started + 1))
done
while [ "$next" -lt ${#bins[@]} ]; do
    wait -n 2>/dev/null || sleep 0.2
    flush
done
wait

if [ "$skipped" -gt 0 ]; then
    echo "$passed passed, $failed failed, $skipped skipped"
else
    echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
