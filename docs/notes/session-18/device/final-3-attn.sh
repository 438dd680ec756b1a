A=$OUT/attn; mkdir -p $A
R=attention,attention_d128,attention_causal,attention_causal_d128,attention_train,attention_train_d128
OUT=$A/r timeout 185 bash .device/run-device.sh --only $R --default-only $R --rep-ms 100 > $A/attn.txt 2>&1; echo "attn rc $?" >> $A/attn.txt
rm -f $A/r/programs.tar
