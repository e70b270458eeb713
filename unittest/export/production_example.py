"""examples/production runs as its opening comment says, with the float64 SevenNet-0 package (what
`nvalchemi-sevenn-export 7net-0 -o sevennet0_float64.pt2 --dtype float64` writes), on 1 and on 4
ranks, each in a folder of its own:

* the run continued from restart.production prints the thermo of the uninterrupted 20-step run
  on 1 rank (the input up to its first run, which runs 20 steps) to the printed digits (2e-7),
  and its dumps at steps 0, 10 (written again after read_restart) and 20 hold the positions and
  forces of that run's to 1e-10 relative (as the continuity tests judge);
* dumps are written at steps 0, 10 and 20, and the barostat grows the box;
* the logs committed beside the example (log.<date>.production.g++.1 and .4) echo its input as
  it is, print the effective spec this build prints and the thermo of the fresh run on as many
  ranks (to the printed digits).

    python production_example.py --lmp LMP --mpirun MPIRUN --repo REPO --model F64.pt2
"""

import argparse
import glob
import os
import re
import shutil
import tempfile

import numpy as np

from examples import PRINTED, echoed_lines, effective_specs
from harness import (Checks, read_dumps, relative_difference, run_input, run_lammps, single_rank_kept,
                     thermo_table, worse)

DUMPED = [0, 10, 20]
# positions and forces compared to the uninterrupted run (continuity.py's bound)
TIGHT = 1e-10


def thermo_difference(tested, reference):
    """The largest relative difference of a thermo column over the steps both tables ({step:
    values}, harness.thermo_table) hold, each column judged against its own size."""
    steps = sorted(set(tested) & set(reference))
    a, b = np.array([tested[s] for s in steps]), np.array([reference[s] for s in steps])
    return worse(*(relative_difference(a[:, k], b[:, k]) for k in range(b.shape[1])))


def dumped_frames(rundir):
    """{step: rows (id type xu yu zu fx fy fz)} of the dump.production.* files in `rundir`."""
    frames = {}
    for path in glob.glob(os.path.join(rundir, "dump.production.*")):
        frames.update(read_dumps(path))
    return frames


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    for name in ("--lmp", "--mpirun", "--repo", "--model"):
        parser.add_argument(name, required=True)
    args = parser.parse_args()
    checks = Checks(width=75)
    source_dir = os.path.join(args.repo, "examples", "production")
    source = open(os.path.join(source_dir, "in.production")).read()
    model_name = re.search(r"^variable\s+model\s+index\s+(\S+)", source, re.MULTILINE).group(1)
    model = os.path.abspath(args.model)
    with tempfile.TemporaryDirectory(prefix="nvalchemi-production-example-") as workdir:
        # the uninterrupted run: the input up to its first run, which runs all 20 steps; the model
        # named by its absolute path so that the kept run's key holds the model's bytes
        straight_text = source[:source.index("run             10\nwrite_restart")] + "run             20\n"
        straight_text = straight_text.replace(f"index {model_name}\n", f"index {model}\n")
        straight_dir = os.path.join(workdir, "uninterrupted")

        def make():
            proc = run_input(args.lmp, args.mpirun, 1, straight_dir, "uninterrupted", straight_text, timeout=600)
            frames = dumped_frames(straight_dir)
            table = thermo_table(proc.stdout)
            return {**{f"atoms{s}": frames[s] for s in frames},
                    "steps": np.array(sorted(table)), "thermo": np.array([table[s] for s in sorted(table)])}

        kept = single_rank_kept(args.lmp, 1, straight_text, make)
        straight = dict(zip(kept["steps"].tolist(), kept["thermo"]))

        outputs = {}
        for ranks in (1, 4):
            rundir = os.path.join(workdir, f"np{ranks}")
            os.makedirs(rundir)
            shutil.copy(os.path.join(source_dir, "in.production"), rundir)
            os.symlink(model, os.path.join(rundir, model_name))
            proc = run_lammps(args.lmp, args.mpirun, ranks, "in.production", rundir, timeout=600)
            checks.expect(proc.returncode == 0, f"np{ranks}: examples/production runs (exit {proc.returncode})"
                          + ("" if proc.returncode == 0 else f":\n{proc.stdout[-3000:]}"))
            checks.exit_on_failure()
            outputs[ranks] = proc.stdout
            continued = thermo_table(proc.stdout)
            checks.expect(sorted(continued) == sorted(straight),
                          f"np{ranks}: thermo at steps {sorted(continued)} (uninterrupted: {sorted(straight)})")
            checks(f"np{ranks}: continued thermo vs uninterrupted np1 (printed digits)",
                   thermo_difference(continued, straight), PRINTED)
            frames = dumped_frames(rundir)
            checks.expect(sorted(frames) == DUMPED, f"np{ranks}: dumps at steps {sorted(frames)} (expected {DUMPED})")
            for step in sorted(set(frames) & set(DUMPED)):
                tested, reference = frames[step], kept[f"atoms{step}"]
                checks.expect(np.array_equal(tested[:, 0], reference[:, 0]), f"np{ranks} step {step}: the same atoms")
                checks(f"np{ranks} step {step}: positions vs uninterrupted np1",
                       relative_difference(tested[:, 2:5], reference[:, 2:5]), TIGHT)
                checks(f"np{ranks} step {step}: forces vs uninterrupted np1",
                       relative_difference(tested[:, 5:8], reference[:, 5:8]), TIGHT)
            volume = [continued[s][-1] for s in (0, 20)]
            checks.expect(volume[1] > volume[0], f"np{ranks}: the barostat grows the box ({volume[0]} -> {volume[1]})")

    lines = echoed_lines(source)
    for ranks in (1, 4):
        logs = sorted(glob.glob(os.path.join(source_dir, f"log.*.production.g++.{ranks}")))
        checks.expect(len(logs) == 1, f"examples/production has a committed log of {ranks} ranks ({logs})")
        for log in logs:
            name, text = os.path.basename(log), open(log).read()
            echoed = set(line.rstrip() for line in text.splitlines())
            stale = [line for line in lines if line not in echoed]
            checks.expect(not stale, f"{name} echoes the input as it is" + (f" (not: {stale[0]!r})" if stale else ""))
            checks.expect(effective_specs(text) == effective_specs(outputs[ranks]),
                          f"{name} prints the effective spec this build prints")
            committed, fresh = thermo_table(text), thermo_table(outputs[ranks])
            checks.expect(sorted(committed) == sorted(fresh), f"{name} prints the thermo steps of the fresh run")
            checks(f"{name}: thermo vs the fresh run on {ranks} ranks", thermo_difference(committed, fresh), PRINTED)
    checks.exit_on_failure()


if __name__ == "__main__":
    main()
