#!/usr/bin/env bash
# Prints, after a ctest run in BUILD, each skipped test with the reasons it
# gave: ctest itself shows only "(Skipped)". Tests say why on lines that start
# with "SKIPPED" (the Criterion main in tests/common/criterion_main.c, and
# the shell tests by the same convention).
# Usage: scripts/test-skips.sh BUILD
set -euo pipefail
log=${1:?usage: test-skips.sh BUILD}/Testing/Temporary/LastTest.log
[[ -f $log ]] || exit 0
awk '
  /^[0-9]+\/[0-9]+ Testing: / { name = $0; sub(/^[0-9]+\/[0-9]+ Testing: /, "", name) }
  /^SKIPPED/ { reasons[name] = reasons[name] "    " $0 "\n"; if (!(name in seen)) { seen[name] = 1; order[n++] = name } }
  END {
    if (n == 0) exit
    printf "Skipped tests and why:\n"
    for (i = 0; i < n; i++) printf "  %s\n%s", order[i], reasons[order[i]]
  }' "$log"
