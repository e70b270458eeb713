"""Running LAMMPS under mpirun from the tests: one place for the command line and the timeout."""

import subprocess
from typing import List, Optional


def run_lammps(lmp: str, mpirun: str, np: int, input_file: str, cwd: str,
               timeout: float = 300.0, wrapper: Optional[List[str]] = None) -> subprocess.CompletedProcess:
    """Run `lmp -in input_file` on `np` ranks; a hang becomes a failure after `timeout` seconds.
    `wrapper` is a command each rank's lmp runs under (e.g. /usr/bin/time)."""
    cmd = [mpirun, "-np", str(np), "--oversubscribe"] + (wrapper or []) + [lmp, "-in", input_file, "-log", "log.lammps"]
    try:
        return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise SystemExit(f"FAIL: LAMMPS did not finish within {timeout} s (hang?): {' '.join(cmd)}\n"
                         f"{exc.stdout or ''}")
