#!/usr/bin/env bash
# Seeds the fuzz corpora (fuzz/corpus/TARGET/) with the golden files, a few files of the example
# archive, the hostile files, and sample caf.toml files. Run from anywhere; then fuzz and
# minimize (docs/reliability.md, "Fuzzing").
set -euo pipefail
cd "$(dirname "$0")"
root=..
golden=("$root"/tests/fixtures/v*/*.json)
golden+=($(ls "$root"/checkpoints/*.json | head -n 3))
hostile=("$root"/tests/fixtures/hostile/*.json)
mkdir -p corpus/{decode,migrate,diff,config}
for f in "${golden[@]}" "${hostile[@]}"; do
  name="$(basename "$(dirname "$f")")-$(basename "$f")"
  [ "$(stat -c %s "$f")" -le 65536 ] || continue
  cp "$f" "corpus/decode/$name"
  cp "$f" "corpus/migrate/$name"
done
# diff: two checkpoints, the first's length as two little-endian bytes in front.
n=${#golden[@]}
for ((i = 0; i < n; i++)); do
  for j in "$i" "$(((i + 1) % n))"; do
    a="${golden[$i]}"
    b="${golden[$j]}"
    len=$(stat -c %s "$a")
    {
      printf "\\x$(printf %02x $((len & 255)))\\x$(printf %02x $((len >> 8)))"
      cat "$a" "$b"
    } >"corpus/diff/pair-$i-$j"
  done
done
# config: the README's and the module docs' examples, and a few refusals.
awk '/^```toml/{on=1; next} /^```/{on=0} on' "$root/README.md" >corpus/config/readme.toml
printf '[retention]\nkeep_last = 50\nmax_age = "30d"\nprotect_labels = ["keep"]\nauto_prune = false\n\n[[retention.tiers]]\nwithin = "1h"\n\n[[retention.tiers]]\nwithin = "1d"\nevery = "1h"\nmax_per_execution = 24\n' >corpus/config/doc.toml
printf '' >corpus/config/empty.toml
printf '[retention]\nkeep_lats = 5\n' >corpus/config/misspelt.toml
printf '[[retention.tiers]]\nwithin = "1d"\n[[retention.tiers]]\nwithin = "1h"\n' >corpus/config/bad-tiers.toml
printf '[retention]\nmax_age = "0s"\nkeep_last = 0\n' >corpus/config/zero.toml
