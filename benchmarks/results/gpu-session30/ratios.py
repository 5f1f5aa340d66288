"""Medians of a device call's rounds (lines: round family auto|off ms), each family's ratio."""
import collections
import statistics
import sys

t = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r, f, c, ms = line.split()
    t[f, c].append(int(ms))
fams = sorted({f for f, _ in t if (f, "auto") in t and (f, "off") in t})
worst = []
for f in fams:
    a, o = statistics.median(t[f, "auto"]), statistics.median(t[f, "off"])
    single = max(x / y for x, y in zip(t[f, "auto"], t[f, "off"]))
    worst.append(a / o)
    print(f"{f} auto {a:.0f} off {o:.0f} median ratio {a / o:.2f} worst round {single:.2f} rounds {len(t[f, 'auto'])}")
print(f"sum of medians {sum(statistics.median(t[f, 'auto']) for f in fams) / sum(statistics.median(t[f, 'off']) for f in fams):.2f}, "
      f"most {max(worst):.2f}")
