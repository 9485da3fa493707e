"""Bar chart of bench/results/fgt_cpu.txt: FGT, direct sum and FIGTree times per bandwidth."""
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

src, png = sys.argv[1], sys.argv[2]
figtree = {0.05: 17.0, 0.2: 10.1, 0.5: 1.7}
ours, direct = {}, None
for line in open(src):
    kv = dict(re.findall(r"(\w+)=([^\s]+)", line))
    if line.startswith("direct"):
        direct = float(kv["time_s"])
    elif line.startswith("fgt") and "time_s" in kv:
        ours[float(kv["h"])] = (float(kv["time_s"]), float(kv["max_abs_error_over_sum_q"]))
hs = sorted(ours)
x = range(len(hs))
w = 0.27
fig, ax = plt.subplots(figsize=(7, 4))
ax.bar([i - w for i in x], [figtree.get(h, 0) for h in hs], w, label="FIGTree (issue, eps 1e-6)")
if direct:
    ax.bar(list(x), [direct] * len(hs), w, label="direct sum (measured)")
ax.bar([i + w for i in x], [ours[h][0] for h in hs], w, label="this FGT (measured)")
for i, h in enumerate(hs):
    ax.annotate(f"{ours[h][0]:.3g} s\nerr {ours[h][1]:.1e}", (i + w, ours[h][0]), ha="center", va="bottom", fontsize=7)
ax.set_xticks(list(x))
ax.set_xticklabels([f"h = {h}" for h in hs])
ax.set_yscale("log")
ax.set_ylabel("seconds (2 threads)")
ax.set_title("3-D Gauss transform, N = M = 1e5 uniform, tolerance 1e-6")
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(png, dpi=120)
print("wrote", png)
