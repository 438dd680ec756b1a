C=$OUT/check; mkdir -p $C
OUT=$C timeout 92 bash scripts/sanitize-device.sh --timeout 80 > $C/san.txt 2>&1; echo "rc $?" >> $C/san.txt
