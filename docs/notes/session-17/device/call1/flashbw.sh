W=$OUT/flashbw; mkdir -p $W; T=$PWD/.device/passes_togpu.test; S=$PWD/.device/strata-bench
command -v ncu nsys > $W/tools.txt 2>&1; ls -d /usr/local/cuda*/bin/nsys /opt/nvidia/nsight-systems* >> $W/tools.txt 2>&1
(cd passes/togpu && timeout 40 $T -test.run 'TestGPUFlashGrad$/^time-train-16x16x1024x1024-d128-.*-qt64-wgmma(-atomic-bulk-r128)?$' -test.v) > $W/times.txt 2>&1; echo "times rc $?"
grep -E "forward\+backward|flash|total" $W/times.txt | cut -c1-160
(cd passes/togpu && timeout 60 ncu --set full --import-source no --launch-skip 3 --launch-count 3 -f -o $W/ours $T -test.run 'TestGPUFlashGrad$/^time-train-16x16x1024x1024-d128-.*-qt64-wgmma$') > $W/ncu-ours.log 2>&1; echo "ncu ours rc $?"
cat > $W/torch_bwd.py <<'EOF'
import torch, torch.nn.functional as F
q, k, v = (torch.randn(16, 16, 1024, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
g = torch.randn(16, 16, 1024, 128, device="cuda", dtype=torch.bfloat16)
for _ in range(3):
    F.scaled_dot_product_attention(q, k, v, is_causal=True).backward(g)
torch.cuda.synchronize()
EOF
timeout 60 ncu --set full --import-source no -k 'regex:bprop|dot_do|convert_dq|bwd' --launch-skip 3 --launch-count 3 -f -o $W/torch python3 $W/torch_bwd.py > $W/ncu-torch.log 2>&1; echo "ncu torch rc $?"
for r in $W/ours $W/torch; do [ -f $r.ncu-rep ] || continue; ncu -i $r.ncu-rep --page details > $r.details.txt 2>&1; ncu -i $r.ncu-rep --page source --csv --print-source sass > $r.sass.csv 2>&1; gzip -f $r.sass.csv; rm -f $r.ncu-rep; done
grep -E "^  [a-zA-Z_].*\(|Duration|Registers Per|Achieved Occupancy|Compute \(SM\) Throughput|DRAM Throughput" $W/ours.details.txt $W/torch.details.txt | cut -c1-170
D=$(mktemp -d); timeout 50 ncu --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread --cache-control none --clock-control none --launch-count 40 --csv --log-file $W/row-kernels.csv $S prepare --out $D --only attention_train_d128 --warmup-ms 1 --rep-ms 5 > $W/row.log 2>&1; echo "row rc $?"; rm -rf $D
