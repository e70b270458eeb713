"""The C++ core and the Python tools agree on the spec's tables (src/USER-NVALCHEMI/
nvalchemi_spec_tables.h): for every preset, alone and with pair_style keywords over it, the
effective spec pair_style nvalchemi prints equals nvalchemi_lammps.spec.effective_spec of the
model's metadata spec and the same keywords; the presets, halo modes and force strategies
LAMMPS lists as valid are the Python side's, in the same order.

    python spec_tables.py --lmp LMP --model lj_ar.pt
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

from nvalchemi_lammps.model_file import read_metadata
from nvalchemi_lammps.spec import HALO_MODES, PRESETS, TABLES, effective_spec

BOX = """units lj
atom_style atomic
region box block 0 4 0 4 0 4
create_box 1 box
mass 1 39.95
"""

# pair_style keywords over a preset, and the spec they stand for
KEYWORDS = [
    ("", {}),
    ("halo deep forces framework_from_global_energy static_shapes yes",
     {"halo": "deep", "compile": {"force_strategy": "global_energy", "static_shapes": True}}),
    ("halo gp output charges per_node all_reduce output forces per_node all_reduce forces model",
     {"halo": "gp", "outputs": {"charges": {"kind": "per_node", "reduce": "all_reduce"},
                                "forces": {"kind": "per_node", "reduce": "all_reduce"}},
      "compile": {"force_strategy": "model"}}),
]


def lammps_log(lmp, workdir, name, commands, expect_error=False):
    path = os.path.join(workdir, f"in.{name}")
    with open(path, "w") as f:
        f.write(BOX + commands)
    proc = subprocess.run([lmp, "-in", path, "-log", "none", "-echo", "none"], capture_output=True, text=True,
                          timeout=300, cwd=workdir)
    if (proc.returncode != 0) != expect_error:
        sys.exit(f"FAIL: {name}: exit {proc.returncode}\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return proc.stdout + proc.stderr


def printed_specs(log):
    """The effective specs in the order LAMMPS printed them."""
    decoder = json.JSONDecoder()
    specs = []
    for found in re.finditer(r"effective spec:\n", log):
        spec, _ = decoder.raw_decode(log[found.end():])
        specs.append(spec)
    return specs


def valid_names(log, what):
    found = re.search(rf"unknown {what} '[^']*' \(valid: ([^)]*)\)", log)
    if found is None:
        sys.exit(f"FAIL: LAMMPS named no valid {what}s:\n{log[-2000:]}")
    return found.group(1).split(", ")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lmp", required=True)
    parser.add_argument("--model", required=True, help="a model of element Ar (lj_ar.pt)")
    args = parser.parse_args()
    model_spec = read_metadata(args.model)["spec"]
    failures = []
    with tempfile.TemporaryDirectory(prefix="nvalchemi-spec-tables-") as workdir:
        cases = [(preset, keywords, dict(keyword_spec, preset=preset))
                 for preset in PRESETS for keywords, keyword_spec in KEYWORDS]
        commands = "".join(f"pair_style nvalchemi {args.model} spec {preset} {keywords}\npair_coeff * * Ar\n"
                           for preset, keywords, _ in cases)
        printed = printed_specs(lammps_log(args.lmp, workdir, "presets", commands))
        if len(printed) != len(cases):
            sys.exit(f"FAIL: LAMMPS printed {len(printed)} effective specs for {len(cases)} pair styles")
        for (preset, keywords, overrides), spec in zip(cases, printed):
            expected = effective_spec(model_spec, overrides)
            ok = spec == expected
            print(f"{'ok  ' if ok else 'FAIL'} spec {preset} {keywords}".rstrip())
            if not ok:
                failures.append(f"spec {preset} {keywords}:\n  LAMMPS {json.dumps(spec, sort_keys=True)}\n"
                                f"  Python {json.dumps(expected, sort_keys=True)}")
        for what, keyword, python_names in (
                ("spec preset", "spec", list(PRESETS)), ("halo mode", "halo", HALO_MODES),
                ("force strategy", "forces", [entry["name"] for entry in TABLES["force_strategies"]])):
            log = lammps_log(args.lmp, workdir, keyword, f"pair_style nvalchemi {args.model} {keyword} none\n",
                             expect_error=True)
            names = valid_names(log, what)
            ok = names == python_names
            print(f"{'ok  ' if ok else 'FAIL'} {what} names: LAMMPS {', '.join(names)}")
            if not ok:
                failures.append(f"{what}s: LAMMPS {names}, Python {python_names}")
    if failures:
        sys.exit("FAIL:\n" + "\n".join(failures))
    print(f"ok: {len(cases)} effective specs and the valid names agree")


if __name__ == "__main__":
    main()
