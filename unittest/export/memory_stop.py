"""A run in halo deep on several ranks that needs more memory than it may have stops with a
LAMMPS error before the model allocates, never the kernel's kill or a hang: SevenNet-0 as `sevenn
deploy` writes it (5 layers of 5 A: a ghost shell of about 27 A around each rank's half of a
64-atom Si cell) on 2 ranks whose address space is capped (ulimit -v). Every rank stops through
the error (error->all: no MPI_Abort), rank 0's message says how much the run needs, under which
limit, and what to do; and rank 0 logs the estimate first.

    python memory_stop.py --lmp LMP --mpirun MPIRUN --model sevenn0_deployed.pt [--cap-gib 6]
"""

import argparse
import os
import resource
import subprocess
import sys
import tempfile

from oracle_parity import make_atoms, write_data

INPUT = """units metal
atom_style atomic
read_data {data}
pair_style nvalchemi {model} device cpu
pair_coeff * * Si
run 0
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lmp", required=True)
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--cap-gib", type=float, default=6.0, help="each rank's address-space limit")
    args = parser.parse_args()
    cap = int(args.cap_gib * 2**30)

    def capped():
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    with tempfile.TemporaryDirectory(prefix="nvalchemi-memory-") as workdir:
        data = os.path.join(workdir, "si64.data")
        write_data(make_atoms("ortho", "si64", ["Si"]), ["Si"], data)
        script = os.path.join(workdir, "in.memory")
        with open(script, "w") as f:
            f.write(INPUT.format(data=data, model=args.model))
        proc = subprocess.run([args.mpirun, "-np", "2", args.lmp, "-in", script, "-log", "log.lammps"], cwd=workdir,
                              capture_output=True, text=True, timeout=300, preexec_fn=capped)
        output = proc.stdout + proc.stderr
    print(output[-3000:])
    expected = ["halo deep on 2 ranks, 5 layers: up to", "the model needs about",
                "ERROR: pair_style nvalchemi: model", "in halo deep on 2 ranks needs about",
                "the process' address-space limit (ulimit -v)", "Run on fewer ranks", "--halo layerwise"]
    missing = [text for text in expected if text not in output]
    failures = [f"missing: {text!r}" for text in missing]
    if proc.returncode == 0:
        failures.append("the run did not stop")
    for sign in ("MPI_ABORT", "Killed", "Segmentation fault", "std::bad_alloc", "out of memory"):
        if sign in output:
            failures.append(f"the run stopped by {sign!r}, not by the memory check")
    print(f"exit {proc.returncode}; " + ("ok" if not failures else "FAIL"))
    if failures:
        sys.exit("FAIL:\n  " + "\n  ".join(failures))


if __name__ == "__main__":
    main()
