#!/usr/bin/env bash
# Runs every test binary given, prints their failures, wall and CPU seconds (user+sys of the binary
# and whatever it waited for), and sums their last lines. Before the summary it lists the
# TEST_SLOWEST (default 10) binaries that took the most CPU, and the total, so the next person sees
# where the time goes (TEST_TIMES=FILE also writes every row there, slowest first).
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
passed=0 failed=0 skipped=0 next=0 cpu_total=0 pick=0 t_start=${EPOCHREALTIME/[.,]/}

# run_one I: runs bins[I] (in a subshell of its own, so that `times`' second line, the CPU time
# of its finished children, is that binary's); its output, exit status, wall and CPU seconds go
# to $tmp/I.{out,rc,secs,times}
run_one() {
    local t0=${EPOCHREALTIME/[.,]/} rc
    "${bins[$1]}" >"$tmp/$1.out" 2>&1
    rc=$?
    echo $(((${EPOCHREALTIME/[.,]/} - t0) / 1000)) >"$tmp/$1.secs"
    times >"$tmp/$1.times"
    echo "$rc" >"$tmp/$1.rc.part" && mv "$tmp/$1.rc.part" "$tmp/$1.rc"
}

# cpu_ms I: the user+sys milliseconds of bins[I] (the second line of `times`: "XmY.YYYs XmY.YYYs")
cpu_ms() {
    local line ms=0 t
    line=$(tail -n 1 "$tmp/$1.times")
    for t in $line; do
        [[ $t =~ ^([0-9]+)m([0-9]+)[.,]([0-9]{3})s$ ]] || continue
        ms=$((ms + BASH_REMATCH[1] * 60000 + 10#${BASH_REMATCH[2]} * 1000 + 10#${BASH_REMATCH[3]}))
    done
    echo "$ms"
}

# secs MS: milliseconds as seconds with one decimal
secs() { printf '%d.%d' $(($1 / 1000)) $(($1 % 1000 / 100)); }

# report I: prints bins[I]'s failures and summary row and adds up its counts
report() {
    local bin=${bins[$1]} out rc wall cpu name last p f s
    out=$(cat "$tmp/$1.out") rc=$(cat "$tmp/$1.rc") wall=$(cat "$tmp/$1.secs") cpu=$(cpu_ms "$1")
    name="$(basename "$(dirname "$bin")")/$(basename "$bin")"
    last=$(printf '%s\n' "$out" | tail -n 1)
    if [[ $last =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed(,\ ([0-9]+)\ skipped)?$ ]]; then
        p=${BASH_REMATCH[1]} f=${BASH_REMATCH[2]} s=${BASH_REMATCH[4]:-0}
    else
        p=0 f=1 s=0
        echo "$bin: no summary line (exit $rc)"
    fi
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; echo "$bin: exit status $rc"; fi
    printf '%s\n' "$out" | grep -E 'FAIL|SKIP|ERROR|runtime error|Sanitizer' | head -n 40
    printf '%-40s %5d passed %3d failed %3d skipped %6ss %6ss CPU\n' "$name" "$p" "$f" "$s" "$(secs "$wall")" "$(secs "$cpu")"
    passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
    cpu_total=$((cpu_total + cpu))
    printf '%d %d %s\n' "$cpu" "$wall" "$name" >>"$tmp/rows"
}

flush() { # reports every finished binary whose predecessors are all reported
    while [ "$next" -lt ${#bins[@]} ] && [ -e "$tmp/$next.rc" ]; do
        report "$next"
        next=$((next + 1))
    done
}

# The start order: the binaries TEST_FIRST names (flavour/name as the summary rows write them;
# the Makefile lists the slowest of make test, longest first) before the rest, in the order given.
# Two binaries with the same name (one test in two flavours: they share scratch paths under
# build/) never run at the same time: one whose namesake is running waits while the ones after
# it start.
declare -A running_name=() # base name -> index of the last started binary of that name
order=() base=() key=()
for i in "${!bins[@]}"; do
    base[i]=${bins[$i]##*/} key[i]=${bins[$i]%/*}
    key[i]=${key[$i]##*/}/${base[$i]}
done
for f in ${TEST_FIRST:-}; do
    for i in "${!bins[@]}"; do [ "${key[$i]}" = "$f" ] && order+=("$i"); done
done
for i in "${!bins[@]}"; do
    [[ " ${order[*]} " == *" $i "* ]] || order+=("$i")
done

# launchable: whether a pending binary can start: the first in start order whose namesake is not
# running (its position in `order` goes to $pick)
launchable() {
    local k i n
    for k in "${!order[@]}"; do
        i=${order[$k]} n=${base[$i]}
        if [ -n "${running_name[$n]:-}" ] && [ ! -e "$tmp/${running_name[$n]}.rc" ]; then continue; fi
        pick=$k
        return 0
    done
    return 1
}

while [ ${#order[@]} -gt 0 ]; do
    if [ "$(jobs -rp | wc -l)" -ge "$jobs" ] || ! launchable; then
        wait -n 2>/dev/null || sleep 0.2
        flush
        continue
    fi
    i=${order[$pick]}
    unset 'order[pick]'
    order=("${order[@]}")
    running_name[${base[$i]}]=$i
    run_one "$i" &
done
while [ "$next" -lt ${#bins[@]} ]; do
    wait -n 2>/dev/null || sleep 0.2
    flush
done
wait

# the slowest binaries by CPU seconds, and the totals (wall: this run's, CPU: summed over the binaries)
if [ -s "$tmp/rows" ]; then
    sort -k1,1nr "$tmp/rows" >"$tmp/sorted"
    echo "-- slowest by CPU (wall s, CPU s) --"
    head -n "${TEST_SLOWEST:-10}" "$tmp/sorted" | while read -r c w n; do
        printf '  %-40s %6ss %6ss CPU\n' "$n" "$(secs "$w")" "$(secs "$c")"
    done
    printf '  %-40s %6ss %6ss CPU (%d binaries, %d at once)\n' "total" \
        "$(secs $(((${EPOCHREALTIME/[.,]/} - t_start) / 1000)))" "$(secs "$cpu_total")" ${#bins[@]} "$jobs"
    if [ -n "${TEST_TIMES:-}" ]; then
        { echo "# cpu_ms wall_ms binary"; cat "$tmp/sorted"; } >"$TEST_TIMES"
    fi
fi
if [ "$skipped" -gt 0 ]; then
    echo "$passed passed, $failed failed, $skipped skipped"
else
    echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
