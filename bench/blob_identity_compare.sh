#!/usr/bin/env bash
# Usage: bench/blob_identity_compare.sh A B
#
# Compares two output directories of bench/blob_identity.sh: every file
# byte for byte (blobs, headers, SVGs, stdout, stderr), except that run
# times ("0.10 s", "12 ms") in stdout and stderr are masked. Prints each
# file that differs or exists on one side only, and each command whose exit
# code is not 0; exits 1 if there is any.
set -u
if [ $# -ne 2 ]; then
    echo "usage: $0 A B" >&2
    exit 2
fi
a=$1
b=$2
bad=0
# Run times: "0.10 s" in text, "seconds": in JSON, and the column under a
# table's "fit s" header (right-aligned: the number ending where it ends).
mask() {
    awk '{
        i = index($0, "fit s")
        if (i > 0) { end = i + 4 }
        else if (end > 0 && length($0) >= end && substr($0, end, 1) != " ") {
            start = end
            while (start > 1 && substr($0, start - 1, 1) != " ") start--
            $0 = substr($0, 1, start - 1) "T" substr($0, end + 1)
        } else if ($0 == "") { end = 0 }
        print
    }' "$1" | sed -E -e 's/[0-9]+(\.[0-9]+)? ?(s|ms|µs|us|min)\b/TIME/g' \
        -e 's/"([a-z_]*seconds)": *[0-9.e+-]+/"\1": T/g'
}
for f in $( (cd "$a" && find . -type f; cd "$b" && find . -type f) | sort -u); do
    if [ ! -f "$a/$f" ] || [ ! -f "$b/$f" ]; then
        echo "only in one: $f"
        bad=1
    elif ! cmp -s "$a/$f" "$b/$f"; then
        case $f in
        *.stdout | *.stderr)
            if ! diff -q <(mask "$a/$f") <(mask "$b/$f") >/dev/null; then
                echo "differs: $f"
                diff <(mask "$a/$f") <(mask "$b/$f") | head -6 | sed 's/^/    /'
                bad=1
            fi
            ;;
        *)
            echo "differs: $f"
            bad=1
            ;;
        esac
    fi
done
for d in "$a" "$b"; do
    for rc in "$d"/*.rc; do
        if [ "$(cat "$rc")" != 0 ]; then
            echo "exit $(cat "$rc"): $rc"
            bad=1
        fi
    done
done
exit $bad
