# Totals of an ncu source-page CSV (ncu -i R --page source --csv --print-source sass): stall reasons, executed instructions by opcode. Usage: python3 ncu.py A.sass.csv ...
import csv, sys, collections, re
def load(p):
    rows = list(csv.reader(open(p)))
    hdr = rows[1]
    out = []
    for r in rows[2:]:
        if len(r) < len(hdr): continue
        d = dict(zip(hdr, r))
        out.append(d)
    return hdr, out
def num(x):
    try: return float(x.replace(',', ''))
    except: return 0.0
for p in sys.argv[1:]:
    hdr, rows = load(p)
    stalls = [h for h in hdr if h.startswith('stall_') and 'Not Issued' not in h]
    tot = collections.Counter()
    for r in rows:
        for s in stalls: tot[s] += num(r[s])
    T = sum(tot.values())
    print('==', p.split('/')[-1][:60], 'samples', int(T))
    print('  ' + ', '.join(f'{s[6:]} {100*v/T:.1f}' for s, v in tot.most_common(12)))
    ops = collections.Counter(); execd = 0
    for r in rows:
        src = r['Source'].strip()
        op = re.sub(r'^@!?U?P\w+\s+', '', src).split(' ')[0]
        op = op.split('.')[0]
        n = num(r['Instructions Executed']); ops[op] += n; execd += n
    print('  warp-instr executed %.1fM' % (execd/1e6))
    print('  ' + ', '.join(f'{o} {v/1e6:.2f}' for o, v in ops.most_common(28)))
