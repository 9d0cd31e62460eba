#!/usr/bin/env bash
# Mutants: deliberate small bugs (tests/mutants/*.patch), each of which one test must catch.
# They show that a check can fail. Not part of `make test`: each mutant needs its own build of
# what it changes (a mutant of mlstack.h recompiles the implementation, a minute or two).
#
#   bash tests/mutants/run.sh [PATCH...]      (default: every tests/mutants/*.patch)
#
# A patch is a `git diff` with header lines before the diff naming the test that must catch it:
#   Test: TARGET [ARGS...]
#   Before: TARGET [ARGS...]     (optional, any number: built and run first, their result not
#                                 judged; e.g. the plain test_real_repro that writes the hashes)
# TARGET is a make target (a test binary or a run script under build/), built and then run from
# the scratch copy's root with ARGS. Other header lines say what the bug is and what catches it.
# For each patch: the working tree (tracked and untracked files, not ignored ones) and build/
# are copied to a scratch directory (times kept, so that only what the patch touches is rebuilt),
# with models/ and ../shared linked to this checkout's, the patch applied
# (it must apply), TARGET built and run. The mutant is caught when the run fails (exit status
# not 0); a build failure counts as missed (the bug must compile). The run's last lines are
# kept in the scratch directory's log. MUTANT_KEEP=1 keeps the scratch directories.
# Ends with "N passed, N failed": caught mutants pass, missed ones fail; exit 1 on any miss.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
if [ $# -eq 0 ]; then set -- tests/mutants/*.patch; fi
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
passed=0 failed=0
for patch in "$@"; do
    [ -f "$patch" ] || { echo "$patch: no such patch"; failed=$((failed + 1)); continue; }
    name=$(basename "$patch" .patch)
    spec=$(sed -n 's/^Test: //p' "$patch" | head -n 1)
    if [ -z "$spec" ]; then
        echo "$name: FAIL: no 'Test:' line"; failed=$((failed + 1)); continue
    fi
    set -- $spec
    target=$1
    shift
    scratch=$(mktemp -d "${TMPDIR:-/tmp}/mlstack-mutant-$name.XXXXXX")
    mkdir -p "$scratch/repo"
    git ls-files -z --cached --others --exclude-standard | xargs -0 cp -p --parents -t "$scratch/repo" 2>/dev/null
    # this checkout's build, times kept: only what the patch touches is rebuilt
    [ -d build ] && cp -a build "$scratch/repo/"
    [ -e models ] && ln -s "$root/models" "$scratch/repo/models"
    [ -d ../shared ] && ln -s "$(cd ../shared && pwd)" "$scratch/shared"
    log="$scratch/log"
    t0=$SECONDS
    if ! git -C "$scratch/repo" apply --unidiff-zero "$root/$patch" 2>"$log"; then
        # (git apply wants a repository or a plain directory: it is the latter)
        echo "$name: FAIL: the patch does not apply"; cat "$log"; failed=$((failed + 1)); continue
    fi
    if ! make -C "$scratch/repo" --no-print-directory -j"$jobs" FORMAT_CHECK=0 "$target" >>"$log" 2>&1; then
        echo "$name: FAIL: $target does not build with the mutant (see $log)"
        tail -n 5 "$log"
        failed=$((failed + 1))
        continue
    fi
    before_ok=1
    while read -r b_target b_args; do
        [ -n "$b_target" ] || continue
        if ! make -C "$scratch/repo" --no-print-directory -j"$jobs" FORMAT_CHECK=0 "$b_target" >>"$log" 2>&1; then
            before_ok=0
            break
        fi
        (cd "$scratch/repo" && "./$b_target" $b_args) >>"$log" 2>&1
    done < <(sed -n 's/^Before: //p' "$patch")
    if [ $before_ok = 0 ]; then
        echo "$name: FAIL: a Before: target does not build with the mutant (see $log)"
        failed=$((failed + 1))
        continue
    fi
    (cd "$scratch/repo" && "./$target" "$@") >>"$log" 2>&1
    rc=$?
    if [ $rc -ne 0 ]; then
        passed=$((passed + 1))
        echo "$name: caught by $target (exit $rc, $((SECONDS - t0)) s): $(grep -E 'FAIL' "$log" | head -n 1 | cut -c1-160)"
    else
        failed=$((failed + 1))
        echo "$name: FAIL: MISSED, $target passed with the mutant: $(tail -n 1 "$log")"
    fi
    [ "${MUTANT_KEEP:-0}" = 1 ] || rm -rf "$scratch"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
