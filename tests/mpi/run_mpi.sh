#!/usr/bin/env bash
# Ranks over MPI on localhost (tests/mpi/test_mpi.c, built by make as build/mpi/test_mpi when
# mpicc exists). Runs mpirun with 2, 3 and 4 ranks (shared memory, then TCP only, as separate
# machines would talk; gather and reduce mode; with an even count also 2 pipeline stages, at 4
# ranks a 2 x 2 mesh), a start with two different models and one with two rank modes (both
# refused), and one rank killed mid-decode, without and with 2 stages (the rest end non-zero
# with a message: at once, but a loaded machine may take a while to tear the job down, so a
# hang is what fails, after 60 s), and one rank stopped (SIGSTOP) mid-decode (the job still ends,
# within 60 s). Last line: the summary.
set -u
cd "$(dirname "$0")/../.."
bin=build/mpi/test_mpi
if ! command -v mpirun >/dev/null 2>&1 || [ ! -x "$bin" ]; then
    echo "SKIP: mpirun or $bin missing (apt-get install openmpi-bin libopenmpi-dev, then make)"
    echo "0 passed, 0 failed, 1 skipped"
    exit 0
fi
# Open MPI refuses root unless told; CI runs as root. --oversubscribe: more ranks than cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
MPIRUN="mpirun --oversubscribe --bind-to none"
passed=0 failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "$0: FAIL: $*"; }
fix=tests/fixtures/models
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# bit-equality and serving: (ranks, transport, model)
for run in "2 - llama" "3 - qwen3" "2 tcp llama_tied" "3 tcp mistral" "4 tcp llama"; do
    set -- $run
    mca=""
    [ "$2" = tcp ] && mca="--mca btl tcp,self --mca btl_tcp_if_include lo"
    out=$(timeout 120 $MPIRUN $mca -np "$1" "$bin" "$fix/$3" 2>&1); rc=$?
    last=$(printf '%s\n' "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed' | tail -n 1)
    if [ $rc -eq 0 ] && [[ $last =~ ^([0-9]+)\ passed,\ 0\ failed ]]; then
        passed=$((passed + ${BASH_REMATCH[1]}))
    else
        bad "mpirun -np $1 ($2) $3: exit $rc"; printf '%s\n' "$out" | tail -n 15
    fi
done

# two ranks, two models: both refuse at start, naming the problem
out=$(timeout 60 $MPIRUN -np 2 "$bin" "$fix/llama" --other "$fix/llama_f16" 2>&1); rc=$?
if [ $rc -ne 0 ] && printf '%s' "$out" | grep -q "different model"; then ok; else bad "different models: exit $rc"; printf '%s\n' "$out" | tail -n 8; fi

# rank 0 in gather mode, rank 1 in reduce mode: both refuse at start
out=$(timeout 60 $MPIRUN -np 2 "$bin" "$fix/llama" --mixed 2>&1); rc=$?
if [ $rc -ne 0 ] && printf '%s' "$out" | grep -q "same engine settings"; then ok; else bad "mixed rank modes: exit $rc"; printf '%s\n' "$out" | tail -n 8; fi

# kill rank 1 mid-decode: the job ends non-zero with a message, not hanging: within 60 s
# (with 2 pipeline stages rank 1 is the second stage, so rank 0 waits for its logits); each
# wait polls, so it takes as long as the job does
kill_test() { # label, then extra mpirun arguments
    local label=$1 pidf="$tmp/pid" job t0 t1 rc secs
    shift
    rm -f "$pidf"
    $MPIRUN "$@" -np 2 "$bin" "$fix/llama" --kill "$pidf" >"$tmp/out" 2>&1 &
    job=$!
    for _ in $(seq 1 1200); do grep -q decoding "$tmp/out" 2>/dev/null && [ -s "$pidf" ] && break; sleep 0.1; done
    if [ -s "$pidf" ] && grep -q decoding "$tmp/out"; then
        t0=$(date +%s.%N)
        kill -9 "$(cat "$pidf")"
        for _ in $(seq 1 700); do kill -0 $job 2>/dev/null || break; sleep 0.1; done
        t1=$(date +%s.%N)
        if kill -0 $job 2>/dev/null; then
            bad "killed rank ($label): job still running after 70 s"; kill -9 $job 2>/dev/null
        else
            wait $job; rc=$?
            secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
            if [ $rc -ne 0 ] && awk -v s="$secs" 'BEGIN { exit !(s <= 60) }' && grep -qiE "rank|signal|killed" "$tmp/out"; then
                ok; echo "killed rank ($label): job ended with exit $rc after $secs s: $(grep -iE 'rank|signal|killed' "$tmp/out" | head -n 2 | tr '\n' ' ')"
            else
                bad "killed rank ($label): exit $rc after $secs s"; tail -n 8 "$tmp/out"
            fi
        fi
    else
        bad "kill test ($label) did not start"; tail -n 8 "$tmp/out"; kill -9 $job 2>/dev/null
    fi
}
kill_test "one stage"
kill_test "2 stages" -x MLSTACK_STAGES=2

# stop (SIGSTOP) rank 1 mid-decode: rank 0 reports the timeout (MLSTACK_MPI_TIMEOUT, 10 s by
# default), frees its engine and ends through mlstack_mpi_finalize, which must abort rather than
# wait in MPI_Finalize for the stopped rank forever: the job ends non-zero within 60 s (a generous
# margin over the timeout for a loaded machine), naming the failed exchange
stop_test() {
    local pidf="$tmp/pid" job t0 t1 rc secs pid
    rm -f "$pidf"
    $MPIRUN -np 2 "$bin" "$fix/llama" --stop "$pidf" >"$tmp/out" 2>&1 &
    job=$!
    for _ in $(seq 1 1200); do grep -q decoding "$tmp/out" 2>/dev/null && [ -s "$pidf" ] && break; sleep 0.1; done
    if [ -s "$pidf" ] && grep -q decoding "$tmp/out"; then
        pid=$(cat "$pidf")
        t0=$(date +%s.%N)
        kill -STOP "$pid"
        for _ in $(seq 1 600); do kill -0 $job 2>/dev/null || break; sleep 0.1; done
        t1=$(date +%s.%N)
        if kill -0 $job 2>/dev/null; then
            bad "stopped rank: job still running after 60 s (rank 0 waits for the stopped rank)"; tail -n 8 "$tmp/out"
            kill -CONT "$pid" 2>/dev/null; kill -9 "$pid" $job 2>/dev/null
        else
            wait $job; rc=$?
            secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
            if [ $rc -ne 0 ] && grep -q "did not complete" "$tmp/out" && grep -q "aborting the job" "$tmp/out"; then
                ok; echo "stopped rank: job ended with exit $rc after $secs s: $(grep -E 'did not complete|aborting' "$tmp/out" | head -n 2 | tr '\n' ' ')"
            else
                bad "stopped rank: exit $rc after $secs s"; tail -n 8 "$tmp/out"
            fi
        fi
        kill -CONT "$pid" 2>/dev/null; kill -9 "$pid" 2>/dev/null
    else
        bad "stop test did not start"; tail -n 8 "$tmp/out"; kill -9 $job 2>/dev/null
    fi
}
stop_test
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
