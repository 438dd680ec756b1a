# Stall samples and executed instructions by region (instruction index cuts, e.g. prologue / key loop / epilogue). Usage: python3 region.py A.sass.csv CUT1 CUT2 ...
import csv, sys, collections, re
p = sys.argv[1]
rows = list(csv.reader(open(p))); hdr = rows[1]
R = [dict(zip(hdr, r)) for r in rows[2:] if len(r) >= len(hdr)]
stalls = [h for h in hdr if h.startswith('stall_') and 'Not Issued' not in h]
def num(x):
    try: return float(x.replace(',', ''))
    except: return 0.0
T = sum(num(r['Warp Stall Sampling (All Samples)']) for r in R)
# regions by execution count: runs of equal-ish counts
cuts = [int(c) for c in sys.argv[2:]]
bounds = [0] + cuts + [len(R)]
for a, b in zip(bounds, bounds[1:]):
    s = sum(num(r['Warp Stall Sampling (All Samples)']) for r in R[a:b])
    ex = sum(num(r['Instructions Executed']) for r in R[a:b])
    st = collections.Counter()
    for r in R[a:b]:
        for h in stalls: st[h[6:]] += num(r[h])
    print(f'[{a},{b}) {100*s/T:5.1f}% samples, {ex/1e6:6.2f}M instr; ' + ', '.join(f'{k} {100*v/T:.1f}' for k, v in st.most_common(6)))
