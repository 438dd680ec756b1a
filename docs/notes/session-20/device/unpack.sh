#!/usr/bin/env bash
# unpack.sh N FILES_AT: unpack call N's tarballs into /work/notes/s20/callN/ and announce it in STATUS.md.
set -u
N=$1; F=$2; D=/work/notes/s20/call$N; mkdir -p $D
for t in $F/*.tgz; do n=$(basename $t .tgz); mkdir -p $D/$n; tar -xzf $t -C $D/$n; done
cp $F/*.txt $F/*.log $D/ 2>/dev/null
echo "$(date -u +%H:%M) call $N results are in $D/ (one folder a helper; call.log = timings): $(ls $D | tr '\n' ' ')" >> /work/notes/s20/STATUS.md
tail -2 /work/notes/s20/STATUS.md; ls -R $D | head -50
