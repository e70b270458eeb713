"""What a committee costs (compute nvalchemi/deviation): the time per step of the committee's
members run alone (each driving an NVE run of its own), against one run where member 0 drives,
the others are `drive no`, and the compute is invoked every N steps (thermo N).

Committees: `layerwise` = members 0 and 1 (both built for halo mode layerwise); `mixed` = members
0, 1 and 2 (2 built for halo mode deep: the ghost shell of the run becomes its 3 cutoffs, which
the layerwise members then carry as rows too). The models are potentials/committee_ar_*.pt on
an fcc argon crystal (lj units, reduced density 0.8442) of 4 * cells^3 atoms.

    build/venv/bin/python bench/committee_cost.py --lmp build/lammps/lmp [--cells 6] [--np 2]

One JSON line per run (seconds per step) and a summary line with the ratios: committee step /
sum of its members' steps alone (every 1: the cost of the deviation against running the models
separately, < 1 when the graph and run share pays), and committee step every N / member 0 alone
(what monitoring costs the driving run). CPU timings of a shared machine: read the ratios.
"""

import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "unittest", "lammps"))
from harness import melt_commands, run_input, seconds_per_step  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
POTENTIALS = os.path.join(HERE, "..", "potentials")
MEMBERS = ["committee_ar_0.pt", "committee_ar_1.pt", "committee_ar_2_deep.pt"]


def pair_lines(members, drive_all=False):
    """pair_style lines of `members` (indices into MEMBERS): alone, or a committee (member 0
    drives) with the compute."""
    paths = [os.path.abspath(os.path.join(POTENTIALS, MEMBERS[m])) for m in members]
    if len(paths) == 1:
        return f"pair_style nvalchemi {paths[0]}\npair_coeff * * Ar\n"
    styles = " ".join(f"nvalchemi {p}" + ("" if k == 0 or drive_all else " drive no") for k, p in enumerate(paths))
    return (f"pair_style hybrid/overlay {styles}\n" +
            "".join(f"pair_coeff * * nvalchemi {k + 1} Ar\n" for k in range(len(paths))) +
            "compute dev all nvalchemi/deviation\nthermo_style custom step pe c_dev[4]\n")


def step_seconds(args, workdir, label, pair, every):
    text = melt_commands(args.cells, 1.2) + pair + "neighbor 0.3 bin\nfix 1 all nve\n"
    text += f"thermo {every}\nrun {args.steps}\n"
    out = run_input(args.lmp, args.mpirun, args.np, os.path.join(workdir, label), label, text, timeout=3600).stdout
    seconds = seconds_per_step(out)
    print(json.dumps({"bench": "committee_cost", "run": label, "atoms": 4 * args.cells ** 3, "np": args.np,
                      "every": every, "seconds_per_step": seconds}), flush=True)
    return seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lmp", required=True)
    parser.add_argument("--mpirun", default="mpirun")
    parser.add_argument("--cells", type=int, default=6)
    parser.add_argument("--np", type=int, default=2)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--every", type=int, default=10, help="the sparser invocation interval")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="nvalchemi-committee-cost-") as workdir:
        alone = [step_seconds(args, workdir, f"alone{m}", pair_lines([m]), args.steps) for m in range(3)]
        summary = {"bench": "committee_cost", "summary": True, "atoms": 4 * args.cells ** 3, "np": args.np}
        for name, members in (("layerwise", [0, 1]), ("mixed", [0, 1, 2])):
            every1 = step_seconds(args, workdir, f"{name}.every1", pair_lines(members), 1)
            sparse = step_seconds(args, workdir, f"{name}.every{args.every}", pair_lines(members), args.every)
            separate = sum(alone[m] for m in members)
            summary[name] = {"every1_over_separate": every1 / separate,
                             f"every{args.every}_over_member0_alone": sparse / alone[0],
                             "every1_over_member0_alone": every1 / alone[0]}
        print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
