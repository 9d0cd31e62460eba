#!/usr/bin/env bash
# Mutants: deliberate bugs in mlstack.h that a test must catch. Not part of `make test` (each one
# builds the implementation again, about three minutes on two cores).
#
#   tests/mutants/run.sh                      every tests/mutants/*.patch: each must FAIL its test
#   tests/mutants/run.sh 51a_kv_bf16_truncate.patch ...        only these
#   tests/mutants/run.sh -r main 51a_...patch  the tests as they were at a git revision: shows
#                                               what the old suite made of the mutant (reported,
#                                               with PASS meaning the old suite missed it)
#   tests/mutants/run.sh -n ...                 no mutation: the same builds and runs must pass
#
# A patch is a unified diff of mlstack.h (apply with `patch -p1`), preceded by lines of the form
#   # test: build/tests/test_models           a make target, then run as a test binary
#   # test: build/tests/test_models args...   (words after the target are its arguments)
#   # also: build/tests/test_families         with -r only: more of the old suite that might
#                                             have caught it (and did not)
# and free text saying what the mutant changes and which check catches it. Each mutant is applied
# to a copy of the tree (git's tracked files, from the working tree or from -r REV) in a
# temporary directory; models/ is linked in, so the real-model tests find SmolLM2 there.
# The exit status is non-zero when a mutant survives (or, with -n, when a test fails).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
rev= nomut=0
while getopts "r:n" o; do
    case $o in
    r) rev=$OPTARG ;;
    n) nomut=1 ;;
    *) sed -n '2,14p' "$0"; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
if [ $# -eq 0 ]; then
    set -- "$here"/*.patch
fi
jobs=${JOBS:-2}
status=0
for p in "$@"; do
    [ -f "$p" ] || p=$here/$p
    name=$(basename "$p" .patch)
    work=$(mktemp -d "${TMPDIR:-/tmp}/mlstack-mutant.XXXXXX")
    if [ -n "$rev" ]; then
        git -C "$root" archive "$rev" | tar -x -C "$work"
    else
        (cd "$root" && git ls-files -z | xargs -0 cp --parents -t "$work" 2>/dev/null)
        cp "$root/mlstack.h" "$work/mlstack.h"
    fi
    rm -rf "$work/models"
    [ -e "$root/models" ] && ln -s "$(cd "$root/models" && pwd -P)" "$work/models"
    if [ $nomut = 0 ] && ! patch -s -p1 -d "$work" <"$p"; then
        echo "$name: ERROR: the patch does not apply"
        status=1
        rm -rf "$work"
        continue
    fi
    verdict=missed
    while read -r target args; do
        log=$work/$(basename "$target").log
        if ! (cd "$work" && nice -n 5 make -s -j"$jobs" "$target") >"$log" 2>&1; then
            echo "$name: $target does not build (see below)"
            tail -5 "$log"
            verdict=error
            continue
        fi
        # shellcheck disable=SC2086
        (cd "$work" && "./$target" $args) >>"$log" 2>&1
        rc=$?
        echo "$name: $target: $(grep -E '^[0-9]+ passed' "$log" | tail -1) (exit $rc)"
        grep -E ': FAIL: ' "$log" | head -3 | sed 's/^/    /'
        if [ $rc != 0 ] && [ $verdict = missed ]; then verdict=caught; fi
    done < <(sed -n 's/^# test: //p' "$p"; [ -n "$rev" ] && sed -n 's/^# also: //p' "$p")
    if [ $nomut = 1 ]; then
        [ $verdict = missed ] && echo "$name: unmutated tree passes" || { echo "$name: unmutated tree FAILS"; status=1; }
    elif [ $verdict = caught ]; then
        echo "$name: CAUGHT${rev:+ by the tests of $rev}"
        [ -n "$rev" ] && status=1
    else
        echo "$name: SURVIVED${rev:+ the tests of $rev} ($verdict)"
        [ -z "$rev" ] && status=1
    fi
    rm -rf "$work"
done
exit $status
