import sys,re
# extract.py N NAME...: print each helper's first ```bash block under "### for call N"
N=sys.argv[1]
for name in sys.argv[2:]:
    s=open(f'/work/notes/{name}-device.md').read()
    m=re.search(r'^### for call '+N+r'\b.*?$(.*?)(?=^### for call |\Z)',s,re.S|re.M)
    if not m: print(f'# {name}: no request',file=sys.stderr); continue
    b=re.search(r'```bash\n(.*?)```',m.group(1),re.S)
    if not b: print(f'# {name}: no bash block',file=sys.stderr); continue
    open(f'/work/notes/s20/parts{N}/{name}.sh','w').write(b.group(1))
    print(f'# {name}: {len(b.group(1))} chars', file=sys.stderr)
