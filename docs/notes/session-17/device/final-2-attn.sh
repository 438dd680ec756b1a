A=$OUT/attn; mkdir -p $A
OUT=$A/r timeout 220 bash .device/run-device.sh --only attention,attention_d128,attention_causal,attention_causal_d128,attention_train,attention_train_d128 --rep-ms 100 > $A/attn.txt 2>&1; echo "attn rc $?" >> $A/attn.txt
rm -f $A/r/programs.tar
