#!/usr/bin/env python3
"""step_timeline.py TRACE.csv [--marker NAME] [--skip N] [--steps N] [--plot OUT.png] [--title T]
                        [--energy-period N]

Median timeline of one MD step from a bench/trace/cuda_trace.c trace. Steps are cut at the end of
the kernels whose (mangled) name contains --marker (default "settle": GROMACS's
GPU update ends each step with SETTLE). For every GPU activity of a step (kernel, memcpy, memset;
the n-th of a name in a step is its own row) and for the runtime calls of the thread that makes
most of them, the median start and end after the step's start, and its stream, over the steps
after the first --skip (default: half). Prints the step times by kind (normal, pair search, and
every --energy-period'th: default 100, GROMACS's nstcalcenergy) and a table sorted by start; with
--plot, a picture of three consecutive steps, one lane per stream and one for the CPU's runtime
calls.
"""
import argparse
import collections
import csv
import re
import statistics
import sys


def short(name):
    """a readable kernel name from an Itanium-mangled one (no c++filt needed)"""
    if not name.startswith('_Z'):
        return name
    s = name[2:]
    parts = []
    if s.startswith('N'):
        s = s[1:]
    while s and (s[0].isdigit() or s[0] == 'L'):
        s = s.lstrip('L')  # internal linkage
        m = re.match(r'(\d+)', s)
        if not m:
            break
        n = int(m.group(1))
        s = s[m.end():]
        parts.append(s[:n])
        s = s[n:]
        if not s or s[0] in 'EI':
            break
    return '::'.join(p for p in parts if not p.startswith('_GLOBAL')) or name


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('trace')
    ap.add_argument('--marker', default='settle')
    ap.add_argument('--skip', type=int, default=-1)
    ap.add_argument('--steps', type=int, default=0)
    ap.add_argument('--plot')
    ap.add_argument('--title', default='')
    ap.add_argument('--energy-period', type=int, default=100)
    a = ap.parse_args()

    gpu, api, ends = [], [], []
    with open(a.trace) as f:
        for r in csv.DictReader(f):
            rec = (int(r['start_ns']), int(r['end_ns']))
            if r['kind'] == 'api':
                api.append((rec[0], rec[1], r['name'], r['thread']))
            else:
                name = short(r['name']) if r['kind'] == 'kernel' else r['kind'] + ' ' + r['name']
                gpu.append((rec[0], rec[1], name, r['stream'], r['graph']))
                if a.marker in r['name']:
                    ends.append(rec[1])
    gpu.sort()
    api.sort()
    ends.sort()
    if len(ends) < 4:
        sys.exit(f'{a.trace}: fewer than 4 kernels named *{a.marker}*')
    skip = a.skip if a.skip >= 0 else len(ends) // 2
    bounds = ends[skip:]
    if a.steps:
        bounds = bounds[: a.steps + 1]
    main_thread = collections.Counter(t for *_, t in api).most_common(1)[0][0] if api else None
    api = [x for x in api if x[3] == main_thread]

    rows = collections.defaultdict(list)  # (what, name, stream, k) -> [(start, end)] after the step start
    periods = []
    gi = ai = 0
    for b0, b1 in zip(bounds, bounds[1:]):
        periods.append(b1 - b0)
        seen = collections.Counter()
        while gi < len(gpu) and gpu[gi][0] < b0:
            gi += 1
        j = gi
        while j < len(gpu) and gpu[j][0] < b1:
            s, e, n, st, g = gpu[j]
            key = ('gpu', n, st)
            rows[key + (seen[key],)].append((s - b0, e - b0))
            seen[key] += 1
            j += 1
        while ai < len(api) and api[ai][0] < b0:
            ai += 1
        j = ai
        while j < len(api) and api[j][0] < b1:
            s, e, n, t = api[j]
            key = ('cpu', n, 'cpu')
            rows[key + (seen[key],)].append((s - b0, e - b0))
            seen[key] += 1
            j += 1
    nsteps = len(periods)
    print(f'{a.title or a.trace}: {nsteps} steps, period median {statistics.median(periods) / 1e3:.1f} us '
          f'(10%..90%: {sorted(periods)[nsteps // 10] / 1e3:.1f}..{sorted(periods)[9 * nsteps // 10] / 1e3:.1f})')
    # the steps by kind: slow ones (more than 3x the median) are GROMACS's pair-search steps; the
    # energy / virial steps come every --energy-period steps: the residue with the slowest median
    med = statistics.median(periods)
    slow = [x for x in periods if x > 3 * med]
    fast = [x for x in periods if x <= 3 * med]
    E = a.energy_period
    by_res = [periods[r::E] for r in range(E)]
    emed = max(statistics.median(v) for v in by_res if v)
    if slow:
        print(f'  normal steps: {len(fast)}, median {statistics.median(fast) / 1e3:.1f} us; slow (pair search) '
              f'steps: {len(slow)}, median {statistics.median(slow) / 1e3:.1f} us; every {E}th step (energy): '
              f'median {emed / 1e3:.1f} us; mean over all {statistics.mean(periods) / 1e3:.1f} us')
    print(f'{"where":5} {"stream":>6} {"start":>7} {"end":>7} {"dur":>6} {"in":>5}  name   (us after the step start; medians)')
    table = []
    for (what, n, st, k), v in rows.items():
        if len(v) < nsteps // 2:  # not in most steps (neighbour search, energy steps)
            continue
        s = statistics.median(x[0] for x in v)
        e = statistics.median(x[1] for x in v)
        d = statistics.median(x[1] - x[0] for x in v)
        table.append((s, e, d, what, st, n, k, len(v)))
    table.sort()
    for s, e, d, what, st, n, k, c in table:
        if what == 'cpu' and d < 2000 and 'ynchronize' not in n and 'Launch' not in n:
            continue  # short runtime calls other than launches and waits
        print(f'{what:5} {st:>6} {s / 1e3:7.1f} {e / 1e3:7.1f} {d / 1e3:6.1f} {c:5d}  {n}{"#" + str(k) if k else ""}')

    if a.plot:
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
        t0, t1 = bounds[0], bounds[min(3, len(bounds) - 1)]
        ev = [x for x in gpu if t0 <= x[0] < t1]
        lanes = sorted({x[3] for x in ev}, key=int) + ['cpu']
        fig, ax = plt.subplots(figsize=(14, 1 + 0.5 * len(lanes)))
        cmap = plt.get_cmap('tab20')
        names = sorted({x[2] for x in ev})
        for s, e, n, st, g in ev:
            ax.barh(lanes.index(st), (e - s) / 1e3, left=(s - t0) / 1e3, color=cmap(names.index(n) % 20), edgecolor='k', lw=0.3)
            if e - s > 4000:  # names where they fit
                ax.text((s + e) / 2e3 - t0 / 1e3, lanes.index(st), n.split('::')[-1][:14], ha='center', va='center', fontsize=6)
        for s, e, n, t in api:
            if t0 <= s < t1 and ('Launch' in n or 'ynchronize' in n or 'Wait' in n):
                ax.barh(len(lanes) - 1, max((e - s) / 1e3, 0.2), left=(s - t0) / 1e3,
                        color='tab:red' if 'ynchronize' in n else 'tab:gray', edgecolor='k', lw=0.3)
        for b in bounds[:4]:
            ax.axvline((b - t0) / 1e3, color='k', ls=':')
        ax.set_yticks(range(len(lanes)))
        ax.set_yticklabels([f'stream {x}' if x != 'cpu' else 'CPU (launch grey, sync red)' for x in lanes])
        ax.set_xlabel('us')
        ax.set_title(a.title or a.trace)
        fig.tight_layout()
        fig.savefig(a.plot, dpi=110)


if __name__ == '__main__':
    main()
