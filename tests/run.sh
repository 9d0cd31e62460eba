#!/usr/bin/env bash
# Runs every test binary given, prints their failures and wall seconds, and sums their last lines.
# Ends with "N passed, N failed" (", N skipped" after when any were skipped); exit 1 on any failure.
set -u
passed=0 failed=0 skipped=0
for bin in "$@"; do
    t0=$SECONDS
    out=$("$bin" 2>&1); rc=$?
    secs=$((SECONDS - t0))
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
done
if [ "$skipped" -gt 0 ]; then
    echo "$passed passed, $failed failed, $skipped skipped"
else
    echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
