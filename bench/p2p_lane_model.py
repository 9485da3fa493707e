#!/usr/bin/env python3
"""Lane use of the CUDA FMM's float P2P on a water box, modelled on the CPU from the leaf counts.

usage: bench/p2p_lane_model.py [FILE.xyzq] [TILE] [DEPTH]
(default: systems/water/build/tile_nx14.xyzq tiled 5 x 5 x 5 = the 1M box, depth 5)

The kernel's scheme (fmm/fmm_cuda.cu, k_p2p<float, 4>): a leaf's targets in chunks of 32; a chunk
of r <= 16 targets gives each W = 32 / r' lanes (r' the power of 2 >= r), which split the
sources; 4 warps take the 27 neighbours w, w + 4, ..; a block holds its lanes until its slowest
warp ends. Against it: one block of 128 lanes per leaf over the 27 neighbours' sources concatenated,
128 // n lanes per target. Prints the pairs, the lane slots of each scheme and their ratio.
"""
import sys

import numpy as np

path = sys.argv[1] if len(sys.argv) > 1 else 'systems/water/build/tile_nx14.xyzq'
tile = int(sys.argv[2]) if len(sys.argv) > 2 else 5
depth = int(sys.argv[3]) if len(sys.argv) > 3 else 5
with open(path) as f:
    L0 = float(next(l for l in f if l.startswith('# box')).split()[2])
d = np.loadtxt(path)
L, s = L0 * tile, 1 << depth
pts = np.concatenate([d[:, :3] + L0 * np.array([i, j, k])
                      for i in range(tile) for j in range(tile) for k in range(tile)])
ix = np.minimum((pts / (L / s)).astype(int), s - 1)
cnt = np.bincount(ix[:, 0] + s * (ix[:, 1] + s * ix[:, 2]), minlength=s ** 3).reshape(s, s, s)
print(f"{len(pts)} particles in {s ** 3} leaves: {cnt.min()}..{cnt.max()} per leaf, mean "
      f"{cnt.mean():.1f}, {100 * (cnt > 32).mean():.0f}% over 32")
nb = np.stack([np.roll(cnt, (-dz, -dy, -dx), axis=(0, 1, 2)) for dz in (-1, 0, 1)
               for dy in (-1, 0, 1) for dx in (-1, 0, 1)], -1).reshape(-1, 27)
c = cnt.reshape(-1)
pairs = int((c * nb.sum(1)).sum())
chunks = blockwide = 0
for n, m in zip(c, nb):
    for tb in range(0, n, 32):
        r, W = min(32, n - tb), 32
        while W > 1 and r > 32 // W:
            W //= 2
        chunks += 4 * 32 * max(sum(-(-int(m[k]) // W) for k in range(w, 27, 4)) for w in range(4))
    G = max(1, 128 // n)
    blockwide += 128 * -(-int(m.sum()) // G) * -(-n * G // 128)
print(f"pairs {pairs:.4g}; lane slots: chunks {chunks:.4g} ({pairs / chunks:.1%} used), "
      f"block-wide {blockwide:.4g} ({pairs / blockwide:.1%} used), ratio {blockwide / chunks:.3f}")
