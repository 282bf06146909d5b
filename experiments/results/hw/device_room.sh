#!/bin/sh
# Make room for a device call: the device tool refuses a working tree over 64 MiB
# (tracked and untracked-not-ignored files, 4 KB blocks), and the carried
# build/dev/tally-run.xz adds about 1 MB. `out` moves the committed databases and
# compressed CSVs, which no device call reads (runs kept as data), to a folder outside the
# tree; `back` puts them back. Nothing is deleted; git sees them as missing in
# between, so run `back` right after the call. From the repository root:
#   sh experiments/results/hw/device_room.sh out|back|size
set -eu
hold=${TALLY_ROOM_DIR:-/tmp/tally-device-room}
# every compressed database and CSV under results/hw but the calibration cache,
# which device calls unpack (git ls-files: the list is the committed one)
files=$(git ls-files 'experiments/results/hw/*.db.xz' 'experiments/results/hw/*.csv.xz' |
        grep -v '/calib\.sqlite')
size() { (git ls-files -z; git ls-files -z --others --exclude-standard) |
         xargs -0 du -c 2>/dev/null | tail -n 1 | awk '{printf "tree: %.1f MiB (limit 64)\n", $1 / 1024}'; }
case ${1:-} in
out)  mkdir -p "$hold"
      for f in $files; do [ -f "$f" ] && mkdir -p "$hold/$(dirname "$f")" && mv "$f" "$hold/$f"; done
      size ;;
back) for f in $files; do [ -f "$hold/$f" ] && mv "$hold/$f" "$f"; done
      git status --short -- experiments/results/hw | grep '^ D' && { echo "still missing (above)" >&2; exit 1; }
      size ;;
size) size ;;
*)    echo "usage: $0 out|back|size" >&2; exit 64 ;;
esac
