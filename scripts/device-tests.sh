#!/usr/bin/env bash
# Builds what the GPU tests need on the device machine, which has no Go:
# a test binary for every package with TestGPU tests, and irc, into .device/
# (ignored by git), with the test programs of runtime/exec. Run it from the
# repository root, then give the device tool `carry: [".device"]` and the
# command it prints.
set -euo pipefail
export PATH=/usr/local/go/bin:$PATH
cd "$(dirname "$0")/.."

mkdir -p .device
grep -qxF '/.device/' .git/info/exclude 2>/dev/null || echo '/.device/' >> .git/info/exclude
rm -f .device/*.test

# Packages whose tests include a TestGPU... function.
pkgs=$(grep -rl --include='*_test.go' -E '^func TestGPU' . | grep -v '^./\.' | xargs -n1 dirname | sort -u)
for dir in $pkgs; do
	name=$(echo "${dir#./}" | tr '/' '_')
	echo "building $dir -> .device/$name.test" >&2
	go test -c -o ".device/$name.test" "$dir"
done
CGO_ENABLED=0 go build -o .device/irc ./tools/irc
# The commit the binaries come from, for the reports run beside them
# (scripts/sanitize-device.sh): the device's copy of the tree is another
# checkout, whose HEAD says nothing about them.
c=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || c="$c+dirty"
echo "$c" > .device/commit
cp -r runtime/exec/testdata .device/programs

cat <<'RUN'
Runner (device tool, carry: [".device"]):
cd .device && for t in *.test; do ./$t -test.v -test.run GPU 2>&1 | tee $OUT/${t%.test}.log; done; for b in interp nvptx; do ./irc run --backend $b programs/vadd.mlir --random-inputs 7 --shape arg0=10000 --shape arg1=10000 > $OUT/vadd.$b.txt 2>&1; done; STRATA_CACHE_DIR=$OUT/cache ./irc run --backend nvptx --explain-cache programs/vadd.mlir --random-inputs 7 --shape arg0=10000 --shape arg1=10000; diff $OUT/vadd.interp.txt $OUT/vadd.nvptx.txt && echo IRC-MATCH
RUN
