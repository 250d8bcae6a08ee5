#!/usr/bin/env bash
# A census of hostile but realistic `sgp` commands (issue 49): full disks on
# stdout and stderr, closed pipes, interruptions mid-write, CRLF files, long
# cells, one-row classes, text-label plots, odd flag values. Each command
# holds when it exits with the code a careful user expects, never panics,
# and leaves no temporary file. Prints each failure and the counts.
#
#   bash bench/census/run.sh target/release/sgp
set -uo pipefail
SGP=$(realpath "${1:-target/release/sgp}")
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
cd "$DIR"
held=0
failed=0

# check WANT 'SHELL COMMAND' [STDERR SUBSTRING]: runs the command (with $S
# the binary), compares its exit status, looks for a panic, a temporary
# file and, if given, a substring of its standard error.
check() {
    local want=$1 cmd=$2 needle=${3:-}
    local got
    S=$SGP bash -c "$cmd" >out.txt 2>err.txt
    got=$?
    local why=""
    [[ $got == "$want" ]] || why="exit $got, want $want"
    grep -q panicked err.txt && why="$why; panicked"
    ls -a | grep -q 'sgp-tmp' && why="$why; temporary left" && rm -f .*sgp-tmp
    [[ -n $needle ]] && ! grep -qF -- "$needle" err.txt out.txt && why="$why; no '$needle'"
    if [[ -z $why ]]; then
        held=$((held + 1))
    else
        failed=$((failed + 1))
        echo "FAILED: $cmd: $why: $(head -c 300 err.txt)"
    fi
}

"$SGP" synth --rows 200 --dim 1 >t.csv
"$SGP" synth --rows 60 --dim 1 >s.csv
"$SGP" fit --data t.csv --m 6 -q --out m.sgp >/dev/null
"$SGP" fit --data t.csv --m 6 -q --out u.sgp --updatable >/dev/null
python3 - <<'EOF'
import random
random.seed(1)
with open("crlf.csv", "w", newline="") as f:
    f.write("a,b,y\r\n")
    for i in range(60):
        f.write(f"{i},{'oops' if i == 56 else i * 2},{i % 7}\r\n")
with open("labels.csv", "w") as f:
    f.write("x,state\n")
    for i in range(120):
        f.write(f"{i / 20},{'ok' if (i // 30) % 2 else 'fault'}\n")
with open("one.csv", "w") as f:
    f.write("x,y\n")
    for i in range(60):
        f.write(f"{i / 10},{2.5 if i == 30 else 0.5}\n")
with open("huge.csv", "w") as f:
    f.write("x,y\n1,2\n" + "9" * 100 + "x" * 3_000_000 + ",3\n4,5\n")
with open("long.csv", "w") as f:
    f.write("an_input_column_name_well_over_31_bytes,y\n")
    for i in range(60):
        f.write(f"{i / 10},{(i % 13) / 3}\n")
with open("wide.csv", "w") as f:
    f.write(",".join(f"x{j}" for j in range(300)) + ",y\n")
    for i in range(40):
        f.write(",".join(str(random.random()) for _ in range(301)) + "\n")
EOF

# Every subcommand with standard output on a full disk, then a closed pipe.
EVERY=(
    "fit --data t.csv --m 5 --out f.sgp"
    "fit --data t.csv --m 5 --out f.sgp --json"
    "predict --model m.sgp --data t.csv"
    "eval --model m.sgp --data t.csv"
    "eval --model m.sgp --data t.csv --json"
    "inspect m.sgp"
    "inspect m.sgp --json"
    "export --model m.sgp --format c"
    "export --model m.sgp --format rust"
    "synth --rows 20"
    "sweep --data t.csv --test t.csv --m 4 --models spgp"
    "replay --model u.sgp --data t.csv --window 50"
    "demo --out d.sgp --m 8"
    "--help"
    "fit --help"
    "--version"
)
for c in "${EVERY[@]}"; do
    check 1 "\$S $c >/dev/full" "<stdout>"
    check 0 "\$S $c | head -c 1 >/dev/null; exit \${PIPESTATUS[0]}"
    check 0 "\$S $c -q 2>&1 | head -c 1 >/dev/null; exit \${PIPESTATUS[0]}"
done
check 1 "\$S fit --data t.csv --m 5 --out f.sgp 2>/dev/full"
check 2 "\$S fit --data nope.csv --out f.sgp 2>/dev/full"

# Interruptions at many moments of a fit and of synth --parquet.
for i in $(seq 1 30); do
    d=$(awk "BEGIN { print $i * 0.012 }")
    check 0 "timeout -s INT $d \$S fit --data t.csv --m 6 -q --out m2.sgp >/dev/null; exit 0"
    check 0 "timeout -s TERM $d \$S synth --rows 400000 --parquet p.parquet; exit 0"
done

# Files as common tools write them, and limits.
check 2 "\$S fit --data crlf.csv --out c.sgp -q" "line 58 (data row 57)"
check 0 "\$S fit --data labels.csv --out l.sgp -q"
check 0 "\$S plot --model l.sgp --data labels.csv --out l.svg"
check 2 "\$S fit --data one.csv --out o.sgp -q" "appears in no other row"
check 2 "\$S fit --data huge.csv --out h.sgp -q; rc=\$?; [[ \$(wc -c <err.txt) -lt 400 ]] && exit \$rc || exit 9"
check 0 "\$S fit --data long.csv --out g.sgp --m 5 -q" "warning"
check 0 "\$S fit --data long.csv --out g.sgp --m 5 --json" "warning"
check 2 "\$S fit --data wide.csv --out w.sgp --m 5 -q" "keep at most"
check 2 "\$S fit --data t.csv --out w.sgp --m -1" "not a count"
check 2 "\$S replay --model u.sgp --data t.csv --window 0" "--window"
check 0 "\$S plot --model m.sgp --data t.csv --out - | grep -q '<svg' && [[ ! -e - ]]"
check 0 "\$S fit --data s.csv --m 5 --updatable -q --out v.sgp"
check 0 "\$S fit --data t.csv --m 5 --out f.sgp | grep -q \"target 'y'\""
check 0 "[[ -z \$(\$S fit --data t.csv --m 5 -q --out f.sgp) ]]"
check 0 "\$S fit --data long.csv --out g.sgp --m 5 --json | grep -q 'a device will refuse'"

echo "census: $held held, $failed failed, of $((held + failed))"
