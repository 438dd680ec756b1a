# The N instructions with the most stall samples, in program order, with their top stall reasons. Usage: python3 top.py A.sass.csv N
import csv, sys, collections, re
p = sys.argv[1]; N = int(sys.argv[2]) if len(sys.argv) > 2 else 40
rows = list(csv.reader(open(p))); hdr = rows[1]
R = [dict(zip(hdr, r)) for r in rows[2:] if len(r) >= len(hdr)]
stalls = [h for h in hdr if h.startswith('stall_') and 'Not Issued' not in h]
def num(x):
    try: return float(x.replace(',', ''))
    except: return 0.0
T = sum(num(r['Warp Stall Sampling (All Samples)']) for r in R)
for i, r in enumerate(R):
    r['i'] = i
top = sorted(R, key=lambda r: -num(r['Warp Stall Sampling (All Samples)']))[:N]
for r in sorted(top, key=lambda r: r['i']):
    s = num(r['Warp Stall Sampling (All Samples)'])
    det = sorted(((num(r[h]), h[6:]) for h in stalls), reverse=True)[:3]
    print(f"{r['i']:5d} {100*s/T:5.1f}% ex={num(r['Instructions Executed'])/1e3:7.0f}k {r['Source'].strip()[:60]:60s} " + ' '.join(f'{n}:{int(v)}' for v, n in det if v))
