"""What the LAMMPS-driven tests share: running LAMMPS under mpirun (with a timeout), the test
systems, and the relative difference they are judged by."""

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from typing import List, Optional

import numpy as np


def run_lammps(lmp: str, mpirun: str, nranks: int, input_file: str, cwd: str,
               timeout: float = 300.0, wrapper: Optional[List[str]] = None,
               lmp_args: Optional[List[str]] = None, env: Optional[dict] = None) -> subprocess.CompletedProcess:
    """Run `lmp -in input_file` on `nranks` ranks; a hang becomes a failure after `timeout` seconds.
    `wrapper` is a command each rank's lmp runs under (e.g. /usr/bin/time); `lmp_args` are more
    command-line switches of lmp (e.g. KOKKOS_SWITCHES); `env`: the ranks' environment (default
    this process's). A relative `lmp` path is taken from the caller's directory, not from `cwd`."""
    if os.sep in lmp:
        lmp = os.path.abspath(lmp)
    cmd = ([mpirun, "-np", str(nranks), "--oversubscribe"] + (wrapper or []) +
           [lmp, "-in", input_file, "-log", "log.lammps"] + (lmp_args or []))
    # OpenMPI's session directory of its own: mpiruns that share one under /tmp race when one
    # ends and removes it while another creates its own inside ("A call to mkdir was unable to
    # create the desired directory"), as tests running side by side do
    with tempfile.TemporaryDirectory(prefix="ompi") as session:
        env = dict(os.environ if env is None else env, OMPI_MCA_orte_tmpdir_base=session)
        try:
            return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
        except subprocess.TimeoutExpired as exc:
            raise SystemExit(f"FAIL: LAMMPS did not finish within {timeout} s (hang?): {' '.join(cmd)}\n"
                             f"{exc.stdout or ''}")


def peak_rss_wrapper(rundir: str) -> List[str]:
    """A `wrapper` for run_lammps that appends each rank's peak resident memory (kB) to a file in
    `rundir` (a file, not stderr: mpirun may drop a rank's last lines of stderr)."""
    return ["/usr/bin/time", "-a", "-o", os.path.join(rundir, "peak_rss_kb"), "-f", "%M"]


def peak_rss_per_rank_mb(rundir: str) -> List[float]:
    """The peak resident memory of each rank of a run wrapped by peak_rss_wrapper, in MB."""
    with open(os.path.join(rundir, "peak_rss_kb")) as f:
        return [int(line) / 1024 for line in f if line.strip().isdigit()]


def peak_rss_mb(rundir: str) -> float:
    """The largest peak resident memory of the ranks of a run wrapped by peak_rss_wrapper, in MB."""
    return max(peak_rss_per_rank_mb(rundir))


def address_space_cap(fraction: float, nranks: int) -> List[str]:
    """A `wrapper` for run_lammps that caps each of `nranks` ranks' address space at its share of
    `fraction` of the machine's memory, so that a run too large for the machine fails with an
    allocation error instead of waking the kernel's OOM killer."""
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return ["prlimit", f"--as={int(fraction * memory / nranks)}"]


# Where reference results (single-rank runs, oracle evaluations, test systems: what several tests
# repeat) are kept between tests: ctest sets it (unittest/CMakeLists.txt); unset, all is made anew.
REFERENCE_CACHE = os.environ.get("NVALCHEMI_REFERENCE_CACHE")


def file_digest(path):
    """The sha256 of a file's bytes, as the keys below name a file by its content."""
    with open(path, "rb") as f:
        return "sha256:" + hashlib.sha256(f.read()).hexdigest()


def content_key(*parts):
    """A hash of `parts`: the path of an existing file (one with a directory part, absolute or
    relative) stands for the hash of its bytes, an array for its dtype, shape and bytes, anything
    else for its repr."""
    digest = hashlib.sha256()
    for part in parts:
        if isinstance(part, np.ndarray):
            part = f"{part.dtype}{part.shape}".encode() + np.ascontiguousarray(part).tobytes()
        elif isinstance(part, str) and os.sep in part and os.path.isfile(part):
            part = file_digest(part).encode()
        else:
            part = repr(part).encode()
        digest.update(hashlib.sha256(part).digest())
    return digest.hexdigest()


def reference_key(lmp, nranks, input_text, steps, lmp_args):
    """What a run's results depend on: the lmp binary (path, size, modification time), the ranks,
    lmp's switches, the steps and the input, in which every path of an existing file (the system,
    the models, a plugin, a kernel library) stands for the hash of its bytes."""
    stat = os.stat(lmp if os.sep in lmp else os.path.join(os.getcwd(), lmp))
    parts = [os.path.abspath(lmp), str(stat.st_size), str(stat.st_mtime_ns), str(nranks), repr(lmp_args),
             repr(list(steps))]
    for token in re.split(r"(\s+)", input_text):
        parts.append(file_digest(token) if token.startswith("/") and os.path.isfile(token) else token)
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def kept_path(key, suffix):
    """Where REFERENCE_CACHE keeps the result `key` names (None without a cache)."""
    return os.path.join(REFERENCE_CACHE, key + suffix) if REFERENCE_CACHE else None


def keep(path, write):
    """Keep a result at `path` (from kept_path): `write(file)` writes it whole, then it is renamed
    into place, so that a test reading the cache never sees half a file."""
    os.makedirs(REFERENCE_CACHE, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=REFERENCE_CACHE, suffix=os.path.splitext(path)[1], delete=False) as f:
        write(f)
    os.replace(f.name, path)


def package_key(*parts):
    """content_key of `parts` (a model's parameters or checkpoint, export arguments, a framework's
    version) and of what compiles an AOTInductor package from them: the nvalchemi_lammps
    sources, torch's version and the CPU instruction set it compiles for. Imports torch and
    nvalchemi_lammps: for the framework venvs' tests."""
    import glob
    import nvalchemi_lammps
    import torch
    sources = sorted(glob.glob(os.path.join(os.path.dirname(nvalchemi_lammps.__file__), "*.py")))
    return content_key(*parts, *sources, torch.__version__, torch.backends.cpu.get_cpu_capability())


def kept_file(key, path, make):
    """Write the file `path` by `make(path)`, or copy it from REFERENCE_CACHE where the same `key`
    (content_key of everything the file depends on) made it before; kept otherwise."""
    cached = kept_path(key, os.path.splitext(path)[1])
    if cached and os.path.exists(cached):
        shutil.copyfile(cached, path)
        return
    make(path)
    if cached:
        with open(path, "rb") as written:
            keep(cached, lambda f: shutil.copyfileobj(written, f))


def kept_arrays(key, compute):
    """The dict of arrays `compute()` returns, taken from REFERENCE_CACHE when a test computed it
    under the same `key` (content_key of everything it depends on) before, and kept otherwise."""
    path = kept_path(key, ".npz")
    if path and os.path.exists(path):
        with np.load(path) as kept:
            return {name: kept[name] for name in kept.files}
    arrays = compute()
    if path:
        keep(path, lambda f: np.savez(f, **arrays))
    return arrays


def single_rank_kept(lmp, nranks, input_text, make, steps=(), lmp_args=None):
    """make() (a dict of arrays: what a run of `input_text` gives); for a single-rank run, the
    reference that the tests of one system and model compare with, each on its own grid, taken
    from REFERENCE_CACHE when the same lmp made the same run before (kept otherwise)."""
    if nranks != 1:
        return make()
    return kept_arrays(reference_key(lmp, 1, input_text, steps, lmp_args), make)


SYSTEMS = {
    # a perturbed fcc crystal filling the box
    "bulk": ("region box {region} 0 6 0 5 0 5 {tilt}\n"
             "create_box 2 box\n"
             "create_atoms 1 box\n"),
    # the same crystal in the lower half of a box twice as long in x: on a 4x1x1 grid the
    # upper two subdomains own no atoms
    "slab": ("region box {region} 0 12 0 5 0 5 {tilt}\n"
             "create_box 2 box\n"
             "region slab block 0.2 5.9 INF INF INF INF\n"
             "create_atoms 1 region slab\n"),
}

# the system is made once, on 1 rank, so that every run holds the same atoms under the same IDs
# (create_atoms numbers atoms by rank)
SETUP = """units {units}
atom_style atomic
lattice fcc {lattice}
{system}set type 1 type/fraction 2 0.3 4321
mass * 1.0
displace_atoms all random 0.05 0.05 0.05 8765 units lattice
velocity all create 1.5 87287 loop geom
write_data system.data
"""


def melt_commands(cells, temperature):
    """Input lines for the LJ melt system: an fcc lattice (density 0.8442) of 4 cells^3 atoms of
    one type, with velocities at `temperature`."""
    return ("units lj\natom_style atomic\nlattice fcc 0.8442\n"
            f"region box block 0 {cells} 0 {cells} 0 {cells}\ncreate_box 1 box\ncreate_atoms 1 box\n"
            f"mass 1 1.0\nvelocity all create {temperature} 87287 loop geom\n")


def decomposition(grid, tiled):
    """LAMMPS' commands for a processor `grid`, or for comm_style tiled balanced by recursive
    bisection once the atoms are read: (the lines before read_data, the lines after it)."""
    if tiled:
        return "comm_style tiled\n", "balance 1.0 rcb\n"
    return f"processors {' '.join(map(str, grid))}\n", ""


def input_head(atoms, pair, *, units="lj", boundary="", comm="", balance="", neighbor=True, dt=0.005,
               integrate=True):
    """The opening the tests' inputs share: `units`, `boundary` (a command, or LAMMPS' default),
    atomic atoms with an atom map, the decomposition (`comm`: processors, comm_style), `atoms`
    (the commands that make them: read_data, read_restart), `balance`, the `pair` lines, the
    tests' neighbor settings (skin 0.3, the list checked every step), the timestep (none when
    `dt` is None) and NVE integration."""
    def lines(text):
        return text if not text or text.endswith("\n") else text + "\n"
    text = (f"units {units}\n{lines(boundary)}atom_style atomic\natom_modify map array\n{lines(comm)}"
            f"{lines(atoms)}{lines(balance)}{lines(pair)}")
    if neighbor:
        text += "neighbor 0.3 bin\nneigh_modify every 1 delay 0 check yes\n"
    if dt is not None:
        text += f"timestep {dt}\n"
    if integrate:
        text += "fix integrate all nve\n"
    return text


def make_system(lmp, mpirun, box, system_name, workdir):
    """Write system.data in workdir: the named system in an orthogonal or triclinic box."""
    tri = box == "tri"
    return write_system(lmp, mpirun, SYSTEMS[system_name].format(region="prism" if tri else "block",
                                                                 tilt="1.0 1.0 -1.0" if tri else ""), workdir)


def write_system(lmp, mpirun, system, workdir, units="lj", lattice="0.8442"):
    """Write system.data in workdir from `system`, the commands that make the box and atoms in
    lattice units of an fcc `lattice` (LAMMPS' lattice argument in `units`: a reduced density
    in lj, else the lattice constant), then typed, displaced and given velocities by SETUP, on
    1 rank (a copy of the file the same lmp wrote from the same commands before, where
    REFERENCE_CACHE keeps it)."""
    setup = SETUP.format(system=system, units=units, lattice=lattice)

    def make(data):
        with open(os.path.join(workdir, "in.setup"), "w") as f:
            f.write(setup)
        proc = run_lammps(lmp, mpirun, 1, "in.setup", workdir)
        if proc.returncode != 0:
            sys.exit(f"FAIL: making the system failed:\n{proc.stdout[-4000:]}")

    data = os.path.join(workdir, "system.data")
    kept_file(reference_key(lmp, 1, setup, [], None), data, make)
    return data


def kokkos_switches(threads):
    """lmp's switches that run an input unchanged under the KOKKOS package: `threads` OpenMP
    threads per rank, every style with a /kk variant taking it (pair_style nvalchemi/kk)."""
    return ["-k", "on", "t", str(threads), "-sf", "kk"]


def ran_nvalchemi_kk(output):
    """Whether LAMMPS' screen output shows pair_style nvalchemi/kk at work: a Kokkos neighbor
    list of the style (named nvalchemi/kk or /kk/host or /kk/device, or nvalchemi as a
    sub-style of hybrid/kk)."""
    return re.search(r"pair nvalchemi(/kk(/host|/device)?)?, perpetual.*\n\s+attributes: [^\n]*kokkos_(device|host)",
                     output) is not None


def atoms_per_rank(output):
    """(owned, ghost) atoms per rank, averaged over ranks, after the last run in LAMMPS' screen
    output (its "Nlocal:" and "Nghost:" lines)."""
    return tuple(float(re.findall(rf"{name}:\s+([\d.eE+-]+) ave", output)[-1]) for name in ("Nlocal", "Nghost"))


def seconds_per_step(output):
    """Wall time per step of the last run in LAMMPS' screen output (its "Loop time" line)."""
    seconds, steps = re.findall(r"Loop time of ([\d.eE+-]+) on \d+ procs for (\d+) steps", output)[-1]
    return float(seconds) / int(steps)


def worse(*values):
    """The largest of the differences, NaN if any is (Python's max(0.0, nan) is 0.0)."""
    return float("nan") if any(v != v for v in values) else max(values)


def relative_difference(a, b):
    """max |a - b| / max |b| (absolute where b is all zero); NaN where either holds one."""
    scale = np.max(np.abs(b))
    return float(np.max(np.abs(a - b)) / scale) if scale > 0 else float(np.max(np.abs(a - b)))


class Checks:
    """A test's numerical checks: each printed with its value and bound; `worst` is the largest
    value of the parity checks (the figure a test reports)."""

    def __init__(self, width=55):
        self.failures, self.worst, self.width = [], 0.0, width

    def __call__(self, name, value, bound, parity=True):
        if parity:  # (an oracle's own error, finite differences' truncation: parity=False)
            self.worst = worse(self.worst, value)
        ok = value <= bound
        print(f"{name:{self.width}s} {value:10.3e}  {'ok' if ok else 'FAIL'}")
        if not ok:
            self.failures.append(f"{name} = {value:.3e}")

    def expect(self, ok, message):
        """A check without a figure: `message` printed, a failure when not `ok`."""
        print(("ok   " if ok else "FAIL ") + message)
        if not ok:
            self.failures.append(message)

    def exit_on_failure(self):
        if self.failures:
            sys.exit("FAIL:\n  " + "\n  ".join(self.failures))


# fix nvalchemi/dd statistic 10: the exchange ops' seconds of the last step, max over ranks
EXCHANGE_SECONDS = 10


def timed_run_commands(steps):
    """Input lines that run 0 steps, then `steps` steps printing every step's energy and the
    exchange ops' time (fix nvalchemi/dd): columns 1 and 2 of last_run_column."""
    return ("fix 1 all nve\nfix dd all nvalchemi/dd\n"
            f"thermo_style custom step pe f_dd[{EXCHANGE_SECONDS}]\n"
            f"thermo_modify norm no format float %.15g\nthermo 1\nrun 0\nrun {steps}\n")


def last_run_rows(output):
    """The thermo rows (lists of floats, Step first) of the last run in LAMMPS' screen output,
    its setup row left out."""
    block = output.split("Step ")[-1].split("Loop time")[0].splitlines()[2:]
    return [[float(v) for v in line.split()] for line in block if line.strip()]


def last_run_column(output, column):
    """Values of thermo column `column` (0 = Step) in the rows of the last run in LAMMPS' screen
    output, its setup row left out."""
    return [row[column] for row in last_run_rows(output)]


def snapshot_commands(steps, dump_columns, global_values):
    """Input lines that run to each of `steps` (cumulative) and write, at each, a dump of every
    atom sorted by ID (step<N>.dump) and one line of global values (step<N>.global), all in
    full precision."""
    text, previous = "", 0
    for step in steps:
        text += f"run {step - previous}\n"
        text += f"write_dump all custom step{step}.dump {dump_columns} modify sort id format float %.17g\n"
        text += ('print "' + " ".join(f"$({g}:%.17g)" for g in global_values) +
                 f'" file step{step}.global screen no\n')
        previous = step
    return text


def run_input(lmp, mpirun, nranks, rundir, label, input_text, timeout=300.0, lmp_args=None):
    """Write `input_text` to `rundir`/in.test (a new directory) and run it on `nranks`; exit the
    test, naming `label`, when LAMMPS fails. Returns the finished process."""
    os.makedirs(rundir)
    with open(os.path.join(rundir, "in.test"), "w") as f:
        f.write(input_text)
    proc = run_lammps(lmp, mpirun, nranks, "in.test", rundir, timeout=timeout, lmp_args=lmp_args)
    if proc.returncode != 0:
        sys.exit(f"FAIL: {label} failed (exit {proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}")
    return proc


def run_snapshots(lmp, mpirun, nranks, rundir, label, input_text, steps, lmp_args=None):
    """Run `input_text` (ending in snapshot_commands) in `rundir`, with lmp's extra switches
    `lmp_args`; exit the test on failure. Returns ({step: (per-atom rows, global values)},
    LAMMPS' screen output); a single-rank run is kept (single_rank_kept)."""
    def make():
        proc = run_input(lmp, mpirun, nranks, rundir, label, input_text, lmp_args=lmp_args)
        arrays = {"output": np.array(proc.stdout)}
        for step in steps:
            arrays[f"atoms{step}"] = np.loadtxt(os.path.join(rundir, f"step{step}.dump"), skiprows=9, ndmin=2)
            arrays[f"globals{step}"] = np.loadtxt(os.path.join(rundir, f"step{step}.global"), ndmin=1)
        return arrays

    run = single_rank_kept(lmp, nranks, input_text, make, steps, lmp_args)
    return {step: (run[f"atoms{step}"], run[f"globals{step}"]) for step in steps}, str(run["output"])


def thermo_table(log, first_column="Step"):
    """Rows of every thermo block in a log, as {step: values} (later blocks win)."""
    table, in_block = {}, False
    for line in log.splitlines():
        words = line.split()
        if words and words[0] == first_column:
            in_block = True
            continue
        if in_block:
            try:
                values = [float(w) for w in words]
            except ValueError:
                in_block = False
                continue
            if values:
                table[int(values[0])] = np.array(values[1:])
    return table


def read_dumps(path):
    """{step: rows} of a multi-frame LAMMPS custom dump sorted by ID."""
    frames, lines = {}, open(path).read().splitlines()
    k = 0
    while k < len(lines):
        step = int(lines[k + 1])
        n = int(lines[k + 3])
        frames[step] = np.array([[float(w) for w in line.split()] for line in lines[k + 9:k + 9 + n]])
        k += 9 + n
    return frames
