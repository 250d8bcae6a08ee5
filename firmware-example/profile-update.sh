#!/usr/bin/env bash
# Where the instructions of one update go (M = 32, D = 4, forgetting
# 0.99; `profile-update.sh [update]`: src/bin/update_profile.rs), or of one
# prediction (`profile-update.sh predict`, SPGP, or `matern`, Matérn 3/2,
# both M = 32, D = 4: src/bin/predict_profile.rs): builds the binary, runs
# it under QEMU with an instruction trace, and sums the instructions
# executed between its two marker calls by the source function they come from (the innermost
# runtime function of llvm-addr2line's inline chain). Needs the model files
# run.sh generates (model/learn_m32.sgp), python3 and llvm-addr2line.
# LISTING=file also writes every executed instruction's disassembly with
# how often it ran (llvm-objdump), to see a loop's loads and overheads.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
case ${1:-update} in
    update) BIN=update_profile WHAT=update ;;
    predict) BIN=predict_profile WHAT=predict ;;
    matern) BIN=predict_profile WHAT=matern ;;
    *) echo "usage: $0 [update|predict|matern]" >&2; exit 2 ;;
esac
ELF=target/thumbv7em-none-eabihf/release/$BIN
cargo build --release -q --target-dir target --bin "$BIN"
TRACE=$(mktemp)
trap 'rm -f "$TRACE"' EXIT
# -singlestep: one instruction per translation block, so -d exec logs
# every instruction executed (the counts match -icount's).
timeout 120 qemu-system-arm -cpu cortex-m4 -machine mps2-an386 -nographic -monitor none \
    -semihosting-config enable=on,target=native -singlestep -d exec,nochain -D "$TRACE" \
    -kernel "$ELF"
python3 - "$ELF" "$TRACE" "$WHAT" "${LISTING:-}" <<'PY'
import collections, re, subprocess, sys
elf, trace, what, listing = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
marks = {}
for line in subprocess.run(["llvm-nm", "-C", elf], capture_output=True, text=True).stdout.splitlines():
    parts = line.split(" ", 2)
    for name in (f"{what}_starts", f"{what}_ends"):
        if len(parts) == 3 and re.search(rf"_profile::{name}(::h[0-9a-f]{{16}})?$", parts[2]):
            marks[name] = int(parts[0], 16) & ~1
pcs, inside = [], False
with open(trace) as f:
    for line in f:
        m = re.search(r"\[[0-9a-f]+/([0-9a-f]+)/", line)
        if not m:
            continue
        pc = int(m.group(1), 16)
        if pc == marks[f"{what}_starts"]:
            inside = True
        elif pc == marks[f"{what}_ends"]:
            break
        elif inside:
            pcs.append(pc)
counts = collections.Counter(pcs)
addrs = sorted(counts)
out = subprocess.run(["llvm-addr2line", "-e", elf, "-i", "-f", "-C", "-a"] + [hex(a) for a in addrs],
                     capture_output=True, text=True).stdout.splitlines()
where, at, i = {}, None, 0
while i < len(out):
    if out[i].startswith("0x"):
        at = int(out[i], 16); where[at] = []; i += 1
    else:
        where[at].append((out[i], out[i + 1] if i + 1 < len(out) else "")); i += 2
by = collections.Counter()
for a, c in counts.items():
    chain = where.get(a, [])
    name = next((f for f, loc in chain if "/runtime/" in loc), chain[0][0] if chain else "?")
    name = re.sub(r"::h[0-9a-f]{16}$", "", name)
    for mangled, plain in (("$u7b$", "{"), ("$u7d$", "}"), ("$LT$", "<"), ("$GT$", ">"),
                           ("$u20$", " "), ("$C$", ","), ("..", "::")):
        name = name.replace(mangled, plain)
    by[name] += c
if listing:
    disassembly = subprocess.run(["llvm-objdump", "-d", "--no-show-raw-insn", elf],
                                 capture_output=True, text=True).stdout.splitlines()
    with open(listing, "w") as out:
        for line in disassembly:
            m = re.match(r"\s*([0-9a-f]+):", line)
            if m and int(m.group(1), 16) in counts:
                out.write(f"{counts[int(m.group(1), 16)]:6d} {line.strip()}\n")
print(f"one {what}, M = 32: {len(pcs)} instructions (the measuring loop's count differs by a few: inlining)")
for name, c in by.most_common():
    print(f"{c:6d}  {name}")
PY
