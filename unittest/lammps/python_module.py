"""LAMMPS as a library: LAMMPS' own `lammps` Python module (installed into build/venv by `make`)
runs pair_style nvalchemi in a process that imported torch first, with the energy and pressure of
the lmp binary on the same input (to 1e-12 relative), and that process maps one LibTorch: the
libtorch_cpu.so of the torch it imported. A process that loaded another installation of LibTorch
before LAMMPS (a hard-linked copy of the same files, so a different path) runs when that
installation records the same version and logs which file it runs; when it records another
version, pair_style nvalchemi stops with an error naming both (an exception in Python, no crash).

    python python_module.py --lmp LMP --model lj_ar.pt --workdir DIR
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

from harness import Checks

INPUT = """units lj
atom_style atomic
lattice fcc 0.8442
region box block 0 4 0 4 0 4
create_box 1 box
create_atoms 1 box
mass 1 1.0
velocity all create 3.0 87287 loop geom
pair_style nvalchemi {model}
pair_coeff * * Ar
fix 1 all nve
thermo 10
run 20
print "final pe $(pe:%.17g) press $(press:%.17g)"
"""

# run in a child process: LibTorch loaded from argv[1] before LAMMPS, then the input
CHILD = """
import ctypes, sys
ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
from lammps import lammps
lmp = lammps(cmdargs=["-log", "none"])
try:
    lmp.commands_string(open(sys.argv[2]).read())
    result = "RAN " + repr(lmp.get_thermo("pe"))
except Exception as e:
    result = "EXCEPTION " + " ".join(str(e).split())
lmp.close()
sys.stdout.flush()
print(result, flush=True)
"""


def final_values(text):
    match = re.search(r"^final pe (\S+) press (\S+)$", text, re.M)
    return (float(match.group(1)), float(match.group(2))) if match else None


def libtorch_maps():
    """The libtorch_cpu.so files this process maps."""
    with open("/proc/self/maps") as maps:
        return sorted({line.split()[-1] for line in maps if line.rstrip().endswith("/libtorch_cpu.so")})


def linked_installation(torch_dir, workdir, version):
    """A second installation of this torch's libraries: torch/lib hard-linked (another path, the
    same bytes) beside a version.py that records `version`."""
    root = tempfile.mkdtemp(prefix="other-torch-", dir=workdir)
    os.makedirs(os.path.join(root, "torch", "lib"))
    lib = os.path.join(torch_dir, "lib")
    for name in os.listdir(lib):
        if os.path.isfile(os.path.join(lib, name)):
            try:
                os.link(os.path.join(lib, name), os.path.join(root, "torch", "lib", name))
            except OSError as e:
                raise SystemExit(f"FAIL: cannot hard-link {lib}/{name} into {root} "
                                 f"(--workdir must be on the file system of the venv): {e}")
    with open(os.path.join(root, "torch", "version.py"), "w") as f:
        f.write(f"__version__ = '{version}'\n")
    return root, os.path.join(root, "torch", "lib", "libtorch_cpu.so")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lmp", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--workdir", required=True)
    args = parser.parse_args()
    checks = Checks()

    import torch
    from lammps import lammps

    os.makedirs(args.workdir, exist_ok=True)
    input_file = os.path.join(args.workdir, "in.python_module")
    with open(input_file, "w") as f:
        f.write(INPUT.format(model=os.path.abspath(args.model)))

    binary = subprocess.run([args.lmp, "-in", input_file, "-log", "none"], capture_output=True,
                            text=True, timeout=300)
    checks.expect(binary.returncode == 0, f"lmp runs the input (exit {binary.returncode})"
                  + ("" if binary.returncode == 0 else f":\n{binary.stdout[-2000:]}{binary.stderr[-2000:]}"))
    checks.exit_on_failure()
    pe_binary, press_binary = final_values(binary.stdout)

    lmp = lammps(cmdargs=["-log", "none", "-screen", "none"])
    lmp.commands_string(open(input_file).read())
    pe, press = lmp.get_thermo("pe"), lmp.get_thermo("press")
    lmp.close()
    checks("pe: lammps module vs lmp (relative)", abs(pe - pe_binary) / abs(pe_binary), 1e-12)
    checks("press: lammps module vs lmp (relative)", abs(press - press_binary) / abs(press_binary), 1e-12)

    torch_dir = os.path.dirname(torch.__file__)
    own = os.path.realpath(os.path.join(torch_dir, "lib", "libtorch_cpu.so"))
    maps = libtorch_maps()
    checks.expect([os.path.realpath(m) for m in maps] == [own],
                  f"one LibTorch mapped, the imported torch's {own} (maps: {maps})")

    for version, runs in ((torch.__version__, True), ("2.0.0+other", False)):
        root, library = linked_installation(torch_dir, args.workdir, version)
        try:
            child = subprocess.run([sys.executable, "-c", CHILD, library, input_file],
                                   capture_output=True, text=True, timeout=300)
        finally:
            shutil.rmtree(root)
        out = child.stdout + child.stderr
        checks.expect(child.returncode == 0, f"LibTorch {version} loaded first: the process ends "
                      f"normally (exit {child.returncode})" + ("" if child.returncode == 0 else f":\n{out[-3000:]}"))
        result = out.strip().splitlines()[-1] if out.strip() else ""
        if runs:
            logged = f"pair_style nvalchemi: LibTorch {version} from {library} (loaded before LAMMPS)"
            checks.expect(logged in out, f"LibTorch {version} from another path: the log says so")
            checks.expect(result.startswith("RAN ") and float(result.split()[1]) == pe,
                          f"LibTorch {version} from another path: the run gives the same pe ({result[:200]})")
        else:
            expected = f"this process runs LibTorch {version} from {library}, loaded before LAMMPS"
            checks.expect(result.startswith("EXCEPTION ") and expected in result,
                          f"LibTorch {version}: pair_style nvalchemi stops with an error naming it, "
                          f"an exception in Python ({result[:600]})")
    checks.exit_on_failure()


if __name__ == "__main__":
    main()
