#!/bin/bash
# A shell for make that times every recipe line: `make test SHELL=tools/make_timed.sh` appends
# "start<TAB>end<TAB>cpu<TAB>command" (start and end in seconds since the epoch, cpu the recipe's
# user + system CPU seconds, its children included; the command cut to 200 characters) to
# $MAKE_TIMES (default /tmp/make-times.tsv), for finding where a build's time goes.
s=$(date +%s.%N)
/bin/bash "$@"
rc=$?
# `times` prints this shell's and then its children's user and system time ("0m1.250s 0m0.031s");
# in a pipeline it would run in a subshell, which has no children: it writes to a file instead
tf="${TMPDIR:-/tmp}/make_timed.$$"
times >"$tf"
cpu=$(tail -n 1 "$tf" | awk '{ t = 0; for (i = 1; i <= 2; i++) { split($i, a, "m"); t += a[1] * 60 + a[2] } printf "%.2f", t }')
rm -f "$tf"
printf '%s\t%s\t%s\t%s\n' "$s" "$(date +%s.%N)" "$cpu" "$(printf '%s' "$2" | tr '\n\t' '  ' | cut -c1-200)" >>"${MAKE_TIMES:-/tmp/make-times.tsv}"
exit $rc
