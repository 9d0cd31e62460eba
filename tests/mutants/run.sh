#!/usr/bin/env bash
# Mutants: deliberate small bugs (tests/mutants/*.patch), each of which a test must catch: they
# show that a check can fail. Not part of `make test`: each rebuilds what it changes (a mutant of
# mlstack.h recompiles the implementation, a few minutes on two cores).
#
#   bash tests/mutants/run.sh [PATCH...]        (default: every tests/mutants/*.patch): each
#                                               must be CAUGHT (a test fails)
#   bash tests/mutants/run.sh -r REV PATCH...   the tests as they were at git revision REV (the
#                                               old suite): CAUGHT or SURVIVED is reported, and
#                                               SURVIVED is what shows the old suite missed it
#   bash tests/mutants/run.sh -n [PATCH...]     no mutation: the same builds and runs must pass
#
# A patch is a unified diff (`git diff`, applied with patch -p1) after header lines
#   # test: TARGET [ARGS...]   a make target, then run from the copy's root with ARGS; every
#                              such line in order (e.g. the plain test_real_repro that writes
#                              the hashes, then the build that reads them); caught when one fails
#   # also: TARGET [ARGS...]   with -r only: more of the old suite that might have caught it
# and free text saying what the bug is and which check catches it.
# Each mutant is applied to a copy of the tree in a temporary directory: the working tree's
# tracked and untracked (not ignored) files with build/ beside them, times kept, so that only
# what the patch touches is rebuilt; with -r, REV's files and an empty build/. models/ and
# ../shared are linked to this checkout's. MUTANT_KEEP=1 keeps the copies (and their logs).
# Ends with "N passed, N failed" (a mutant caught, or with -n a clean pass, is a pass; exit 1 on
# any failure); with -r, "N caught, N survived by the tests of REV" (exit 0: that is the report).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
rev= nomut=0
while getopts "r:n" o; do
    case $o in
    r) rev=$OPTARG ;;
    n) nomut=1 ;;
    *) sed -n '2,22p' "$0"; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] && set -- tests/mutants/*.patch
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
passed=0 failed=0
for patch in "$@"; do
    [ -f "$patch" ] || patch=tests/mutants/$patch
    [ -f "$patch" ] || { echo "$patch: no such patch"; failed=$((failed + 1)); continue; }
    patch=$(cd "$(dirname "$patch")" && pwd)/$(basename "$patch")
    name=$(basename "$patch" .patch)
    scratch=$(mktemp -d "${TMPDIR:-/tmp}/mlstack-mutant-$name.XXXXXX")
    mkdir -p "$scratch/repo"
    if [ -n "$rev" ]; then
        git archive "$rev" | tar -x -C "$scratch/repo"
    else
        git ls-files -z --cached --others --exclude-standard | xargs -0 cp -p --parents -t "$scratch/repo" 2>/dev/null
        [ -d build ] && cp -a build "$scratch/repo/"
    fi
    rm -rf "$scratch/repo/models"
    [ -e models ] && ln -s "$(cd models && pwd -P)" "$scratch/repo/models"
    [ -d ../shared ] && ln -s "$(cd ../shared && pwd -P)" "$scratch/shared"
    log=$scratch/log
    t0=$SECONDS
    if [ $nomut = 0 ] && ! patch -s -p1 -d "$scratch/repo" <"$patch" >"$log" 2>&1; then
        echo "$name: FAIL: the patch does not apply"; cat "$log"; failed=$((failed + 1)); continue
    fi
    verdict=missed
    while read -r target args; do
        [ -n "$target" ] || continue
        if ! make -C "$scratch/repo" --no-print-directory -j"$jobs" FORMAT_CHECK=0 "$target" >>"$log" 2>&1; then
            echo "$name: $target does not build (see $log)"; tail -n 5 "$log"; verdict=error; continue
        fi
        # shellcheck disable=SC2086
        (cd "$scratch/repo" && "./$target" $args) >"$log.run" 2>&1
        rc=$?
        cat "$log.run" >>"$log"
        echo "$name: $target: $(grep -E '^[0-9]+ passed' "$log.run" | tail -n 1) (exit $rc)"
        grep -E 'FAIL' "$log.run" | head -n 3 | cut -c1-200 | sed 's/^/    /'
        if [ $rc != 0 ] && [ $verdict = missed ]; then verdict=caught; fi
    done < <(sed -n 's/^# test: //p' "$patch"; [ -n "$rev" ] && sed -n 's/^# also: //p' "$patch")
    if [ $nomut = 1 ]; then
        if [ $verdict = missed ]; then passed=$((passed + 1)); echo "$name: unmutated tree passes"
        else failed=$((failed + 1)); echo "$name: FAIL: the unmutated tree fails"; fi
    elif [ $verdict = caught ]; then
        passed=$((passed + 1)); echo "$name: CAUGHT${rev:+ by the tests of $rev} ($((SECONDS - t0)) s)"
    else
        failed=$((failed + 1))
        if [ -n "$rev" ]; then echo "$name: SURVIVED the tests of $rev ($verdict, $((SECONDS - t0)) s)"
        else echo "$name: FAIL: SURVIVED ($verdict, $((SECONDS - t0)) s)"; fi
    fi
    [ "${MUTANT_KEEP:-0}" = 1 ] || rm -rf "$scratch"
done
if [ -n "$rev" ]; then
    echo "$passed caught, $failed survived by the tests of $rev"
    exit 0
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
