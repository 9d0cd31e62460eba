#!/bin/bash
# A shell for make that times every recipe line: `make test SHELL=tools/make_timed.sh` appends
# "start<TAB>end<TAB>command" (seconds since the epoch; the command cut to 200 characters) to
# $MAKE_TIMES (default /tmp/make-times.tsv), for finding where a build's time goes.
s=$(date +%s.%N)
/bin/bash "$@"
rc=$?
printf '%s\t%s\t%s\n' "$s" "$(date +%s.%N)" "$(printf '%s' "$2" | tr '\n\t' '  ' | cut -c1-200)" >>"${MAKE_TIMES:-/tmp/make-times.tsv}"
exit $rc
