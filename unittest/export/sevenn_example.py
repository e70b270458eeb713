"""examples/sevenn runs as its opening comment says: the float32 SevenNet-0 package (what
`nvalchemi-sevenn-export 7net-0 -o sevennet0.pt2` writes) on 4 ranks prints the thermo of the
1-rank run to float32 precision (1e-5 relative), and with the float64 package ("-var model FILE",
what --dtype float64 writes) to the 8 digits LAMMPS prints; the logs committed beside the example echo its
input as it is.

    python sevenn_example.py --lmp LMP --mpirun MPIRUN --repo REPO --float32 F32.pt2 --float64 F64.pt2
"""

import argparse
import glob
import os
import shutil
import tempfile

import numpy as np

from examples import thermo
from harness import Checks, run_lammps


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    for name in ("--lmp", "--mpirun", "--repo", "--float32", "--float64"):
        parser.add_argument(name, required=True)
    args = parser.parse_args()
    checks = Checks()
    source = os.path.join(args.repo, "examples", "sevenn")
    with tempfile.TemporaryDirectory(prefix="nvalchemi-sevenn-example-") as workdir:
        shutil.copy(os.path.join(source, "in.sevenn"), workdir)
        runs = {}
        for label, model, ranks in (("float32.np1", args.float32, 1), ("float32.np4", args.float32, 4),
                                    ("float64.np1", args.float64, 1), ("float64.np4", args.float64, 4)):
            proc = run_lammps(args.lmp, args.mpirun, ranks, "in.sevenn", workdir, timeout=900,
                              lmp_args=["-var", "model", os.path.abspath(model)])
            checks.expect(proc.returncode == 0, f"{label} runs (exit {proc.returncode})"
                          + ("" if proc.returncode == 0 else f":\n{proc.stdout[-3000:]}"))
            checks.exit_on_failure()
            runs[label] = thermo(proc.stdout)
        for dtype, bound in (("float32", 1e-5), ("float64", 2e-7)):
            one, four = runs[f"{dtype}.np1"], runs[f"{dtype}.np4"]
            for column in ("PotEng", "TotEng", "Press"):
                scale = max(np.max(np.abs(one[column])), 1e-300)
                difference = float(np.max(np.abs(four[column] - one[column]))) / scale
                checks(f"{dtype}: {column} on 4 ranks vs 1 rank", difference, bound)
    text = open(os.path.join(source, "in.sevenn")).read()
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    logs = sorted(glob.glob(os.path.join(source, "log.*")))
    checks.expect(len(logs) > 0, f"examples/sevenn has committed logs ({len(logs)})")
    for log in logs:
        echoed = set(line.rstrip() for line in open(log).read().splitlines())
        stale = [line for line in lines if line not in echoed]
        checks.expect(not stale, f"{os.path.basename(log)} echoes the input as it is"
                      + (f" (not: {stale[0]!r})" if stale else ""))
    checks.exit_on_failure()


if __name__ == "__main__":
    main()
