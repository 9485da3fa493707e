#!/usr/bin/env python3
"""compare_trr.py - compare the forces (and positions) of two GROMACS .trr files, frame by frame.

Usage: compare_trr.py REF.trr TEST.trr [--frames K] [--json]

Reads the XDR .trr format directly (single or double precision; no GROMACS needed) and prints,
for each of the first K frames present in both files (default all), the relative RMS force error
    sqrt( sum_i |f_i - fref_i|^2 / sum_i |fref_i|^2 )
the largest per-atom force error relative to the RMS reference force, the largest position
difference (to make sure the two runs saw the same coordinates) and the atom count.
Exit status 1 if the files cannot be compared (atom counts differ, a frame has no forces).
"""
import argparse
import json
import struct
import sys

import numpy as np

MAGIC = 1993


class TrrReader:
    def __init__(self, path):
        self.data = open(path, "rb").read()
        self.pos = 0
        self.path = path

    def _int(self):
        (v,) = struct.unpack_from(">i", self.data, self.pos)
        self.pos += 4
        return v

    def _reals(self, n, size):
        fmt = ">%d%s" % (n, "f" if size == 4 else "d")
        v = np.array(struct.unpack_from(fmt, self.data, self.pos), dtype=np.float64)
        self.pos += n * size
        return v

    def frames(self):
        while self.pos < len(self.data):
            if self._int() != MAGIC:
                raise ValueError("%s: bad magic number at byte %d" % (self.path, self.pos - 4))
            slen = self._int()  # strlen + 1
            n = self._int()  # xdr string length
            self.pos += (n + 3) // 4 * 4
            del slen
            (ir, e, box, vir, pres, top, sym, x, v, f, natoms, step, nre) = [self._int() for _ in range(13)]
            if natoms <= 0:
                raise ValueError("%s: natoms %d" % (self.path, natoms))
            size = None
            for nbytes, count in ((box, 9), (x, 3 * natoms), (v, 3 * natoms), (f, 3 * natoms)):
                if nbytes:
                    size = nbytes // count
                    break
            if size not in (4, 8):
                raise ValueError("%s: cannot tell the precision" % self.path)
            t, lam = self._reals(2, size)
            frame = {"natoms": natoms, "step": step, "time": t, "precision": size}
            for key, nbytes, count in (("box", box, 9), ("vir", vir, 9), ("pres", pres, 9)):
                if nbytes:
                    frame[key] = self._reals(count, size)
            self.pos += ir + e + top + sym
            for key, nbytes in (("x", x), ("v", v), ("f", f)):
                if nbytes:
                    frame[key] = self._reals(3 * natoms, size).reshape(natoms, 3)
            yield frame


def compare(ref, test):
    if ref["natoms"] != test["natoms"]:
        raise ValueError("atom counts differ: %d vs %d" % (ref["natoms"], test["natoms"]))
    if "f" not in ref or "f" not in test:
        raise ValueError("a frame has no forces (set nstfout in the mdp)")
    d = test["f"] - ref["f"]
    rms_ref = np.sqrt(np.mean(np.sum(ref["f"] ** 2, axis=1)))
    out = {
        "step": int(ref["step"]),
        "natoms": int(ref["natoms"]),
        "force_rel_rms": float(np.sqrt(np.sum(d ** 2) / np.sum(ref["f"] ** 2))),
        "force_max_rel": float(np.max(np.linalg.norm(d, axis=1)) / rms_ref),
        "force_rms_ref": float(rms_ref),
        "precision_ref": ref["precision"],
        "precision_test": test["precision"],
    }
    if "x" in ref and "x" in test:
        out["x_max_diff"] = float(np.max(np.abs(test["x"] - ref["x"])))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("ref")
    ap.add_argument("test")
    ap.add_argument("--frames", type=int, default=0, help="compare at most K frames (0: all)")
    ap.add_argument("--json", action="store_true", help="one JSON object per frame")
    a = ap.parse_args()
    try:
        results = []
        for k, (fr, ft) in enumerate(zip(TrrReader(a.ref).frames(), TrrReader(a.test).frames())):
            if a.frames and k >= a.frames:
                break
            results.append(compare(fr, ft))
    except (ValueError, OSError, struct.error) as e:
        print("compare_trr.py: %s" % e, file=sys.stderr)
        return 1
    if not results:
        print("compare_trr.py: no frame in common", file=sys.stderr)
        return 1
    for r in results:
        if a.json:
            print(json.dumps(r))
        else:
            print("step %d natoms %d force_rel_rms %.3e force_max_rel %.3e rms_ref_force %.6g kJ/mol/nm "
                  "x_max_diff %.2e" % (r["step"], r["natoms"], r["force_rel_rms"], r["force_max_rel"],
                                       r["force_rms_ref"], r.get("x_max_diff", float("nan"))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
