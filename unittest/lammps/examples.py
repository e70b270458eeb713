"""Every example runs, on 2 ranks, and does what its opening comment says.

* examples/lj: the LJ model "matches pair_style lj/cut 2.5 to rounding": the same input with
  lj/cut 2.5 prints the same thermo, and so do the runs with "threads 2" and "device cpu";
* examples/spec: the keywords reach the effective spec, c_e equals pe, v_wp (the model's virial
  trace / 3V) equals c_pv (the virial part of the pressure), the per-atom virials are dumped;
* examples/mp: "swap in schnet_deep.pt2 ... same answer": the deep model prints the same thermo
  (over the first 10 steps); with "static_shapes yes" the thermo is the same and the log reports
  the capacities;
* examples/mace: "Add 'halo deep' ...: the thermo is the same" (over the first 20 steps), and
  the run conserves energy;
* examples/longrange: "add 'halo layerwise' or 'halo deep' ... the thermo is the same", and the
  in-run validation passes on steps 0, 25 and 50;
* examples/ewald: the thermo equals LAMMPS' coul/long + ewald with the same parameters (to 1e-6,
  the pressure to 1e-5: coul/long's erfc is a polynomial), c_ek equals elong, the charges sum to
  zero;
* examples/pme: at step 0, energy and elong equal coul/long + pppm with the same mesh and order
  to 2e-4, energy and pressure equal the Ewald sum (examples/ewald's) to 1e-4, and the pressure
  is closer to it than pppm's;
* examples/dftd3: the two instances' energies (compute pair) add up to pe;
* examples/gp: without 'spec SPEC_MPNN_GP' (halo layerwise) the thermo is the same, and the gp
  run reports its static shapes;
* examples/committee: model_devi.out has a row per thermo step with the thermo's max_devi_f,
  and candidates.xyz holds exactly the frames whose max_devi_f is above the threshold;
* examples/npt: the run continued from the restart file prints the thermo of an uninterrupted
  100-step run, the dumps are written every 25 steps and the box shrinks under the barostat;
* examples/dd: validation every 50 steps passes, the thermo has the statistics the comment
  lists (timings included), the umbrella pulls the centre towards x = 6.9 and its energy enters
  pe (pe minus the same run without fix_modify energy equals f_dd);
* the logs committed beside each example echo its input as it is and print the effective spec
  this build prints;
* every example runs under -k on t 2 -sf kk (pair_style nvalchemi/kk, the KOKKOS package),
  its last run cut to 20 steps, and prints the thermo of its plain run.
Thermo values are compared to the precision LAMMPS prints (8 significant digits): 2e-7 relative.
"""

import argparse
import glob
import os
import re
import shutil
import sys
import tempfile

import numpy as np

from harness import Checks, kokkos_switches, ran_nvalchemi_kk, run_lammps

PRINTED = 2e-7
# steps of each example's last run under KOKKOS (thermo every 10 steps in every example)
KOKKOS_STEPS = 20


def thermo(output):
    """{column: values} of the last thermo table in LAMMPS' screen output."""
    table = re.findall(r"^\s*(Step\s.*?)\n(.*?)\nLoop time", output, re.DOTALL | re.MULTILINE)[-1]
    names = table[0].split()
    rows = [[float(v) for v in line.split()] for line in table[1].splitlines()
            if re.match(r"^\s*\d", line) and len(line.split()) == len(names)]
    return {name: np.array([row[k] for row in rows]) for k, name in enumerate(names)}


def close(a, b, tol=PRINTED):
    scale = max(np.max(np.abs(b)), 1e-300)
    return float(np.max(np.abs(a - b)) / scale) <= tol


class Example:
    def __init__(self, args, workdir, name):
        self.args, self.name = args, name
        self.dir = os.path.join(workdir, "examples", name)
        shutil.copytree(os.path.join(args.repo, "examples", name), self.dir)
        self.source = open(os.path.join(self.dir, f"in.{name}")).read()

    def run(self, label, text=None, lmp_args=None):
        """Run the input (or a variant of it) on 2 ranks, with lmp's extra switches `lmp_args`;
        exit the test on failure. The screen output of the input itself is kept in `self.output`."""
        path = f"in.{label}"
        with open(os.path.join(self.dir, path), "w") as f:
            f.write(self.source if text is None else text)
        proc = run_lammps(self.args.lmp, self.args.mpirun, 2, path, self.dir, timeout=600, lmp_args=lmp_args)
        if proc.returncode != 0:
            sys.exit(f"FAIL: examples/{self.name} ({label}) exit {proc.returncode}:\n{proc.stdout[-3000:]}")
        if text is None and lmp_args is None:
            self.output = proc.stdout
        return proc.stdout

    def variant(self, old, new):
        assert old in self.source, (self.name, old)
        return self.source.replace(old, new)


def echoed_lines(text):
    """An input's lines as LAMMPS echoes them to its log, comments included: continuation lines
    joined (the '&' and its newline dropped), blank lines left out."""
    return [line.rstrip() for line in text.replace("&\n", "").splitlines() if line.strip()]


def effective_specs(text):
    """The effective specs a LAMMPS output or log prints, one per pair_style nvalchemi setup."""
    return re.findall(r"effective spec:\n(\{.*?\n\})", text, re.DOTALL)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lmp", required=True)
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("--repo", required=True)
    args = parser.parse_args()

    checks = Checks()

    def check(example, what, ok):
        checks.expect(ok, f"examples/{example}: {what}")

    with tempfile.TemporaryDirectory(prefix="nvalchemi-examples-") as workdir:
        os.symlink(os.path.join(args.repo, "potentials"), os.path.join(workdir, "potentials"))

        lj = Example(args, workdir, "lj")
        model, native = thermo(lj.run("lj")), thermo(lj.run("lj_cut", lj.variant(
            "pair_style      nvalchemi ../../potentials/lj_ar.pt2\npair_coeff      * * Ar",
            "pair_style      lj/cut 2.5\npair_coeff      * * 1.0 1.0")))
        check("lj", "thermo equals the run with pair_style lj/cut 2.5",
              all(close(model[k], native[k]) for k in native))
        threaded = thermo(lj.run("lj_threads", lj.variant("lj_ar.pt2\n", "lj_ar.pt2 threads 2\n")))
        check("lj", "threads 2 gives the same thermo", all(close(model[k], threaded[k]) for k in model))
        on_cpu = thermo(lj.run("lj_device_cpu", lj.variant("lj_ar.pt2\n", "lj_ar.pt2 device cpu\n")))
        check("lj", "device cpu gives the same thermo", all(close(model[k], on_cpu[k]) for k in model))

        spec = Example(args, workdir, "spec")
        out = spec.run("spec")
        t = thermo(out)
        check("spec", "the output keyword is in the effective spec",
              re.search(r'"atomic_virials": \{\s*"kind": "per_node",\s*"reduce": "all_reduce"', out) is not None)
        check("spec", "the force strategy keyword is in the effective spec", '"force_strategy": "model"' in out)
        check("spec", "c_e equals pe", close(t["c_e"], t["PotEng"]))
        check("spec", "v_wp equals c_pv", close(t["v_wp"], t["c_pv"]))
        dump = np.loadtxt(os.path.join(spec.dir, "dump.spec"), skiprows=9, max_rows=2048)    # the first frame
        check("spec", "per-atom virials are dumped and nonzero", dump.shape[1] == 12 and np.any(dump[:, 9:] != 0))

        mp = Example(args, workdir, "mp")
        # the deep halo costs ~20x the layerwise step here: its first 10 steps make the point
        layerwise = thermo(mp.run("mp"))
        deep = thermo(mp.run("mp_deep", mp.variant("schnet_layerwise.pt2", "schnet_deep.pt2").replace(
            "run             50", "run             10")))
        rows = len(deep["Step"])
        check("mp", f"schnet_deep.pt2 gives the same thermo as schnet_layerwise.pt2 (steps {deep['Step']})",
              rows == 2 and all(close(layerwise[k][:rows], deep[k]) for k in layerwise))
        out = mp.run("mp_static", mp.variant("schnet_layerwise.pt2 ", "schnet_layerwise.pt2 static_shapes yes "))
        check("mp", "static_shapes yes gives the same thermo and reports its capacities",
              "pair_style nvalchemi: static shapes:" in out
              and all(close(layerwise[k], v) for k, v in thermo(out).items()))

        mace = Example(args, workdir, "mace")
        layerwise = thermo(mace.run("mace"))
        deep = thermo(mace.run("mace_deep", mace.variant("mace_ho_tiny.pt2\n", "mace_ho_tiny.pt2 halo deep\n").replace(
            "run             50", "run             20")))
        rows = len(deep["Step"])
        check("mace", f"'halo deep' gives the same thermo (steps {deep['Step']})",
              rows == 3 and all(close(layerwise[k][:rows], deep[k]) for k in layerwise))
        check("mace", "the total energy is conserved over 50 steps (NVE)",
              close(layerwise["TotEng"], np.full_like(layerwise["TotEng"], layerwise["TotEng"][0]), 1e-8))

        longrange = Example(args, workdir, "longrange")
        out = longrange.run("longrange")
        local = thermo(out)
        steps = [int(s) for s in re.findall(r"validate step (\d+): largest differences", out)]
        check("longrange", f"validation on steps 0, 25, 50 (found {steps})", steps == [0, 25, 50])
        for mode in ("layerwise", "deep"):
            other = thermo(longrange.run(f"longrange_{mode}", longrange.variant(
                "long_range_ar.pt2 lj/cut", f"long_range_ar.pt2 halo {mode} lj/cut")))
            # (f_dd[12], the validation's difference, is rounding noise and differs by mode)
            check("longrange", f"halo {mode} gives the same thermo as the default (local)",
                  all(close(local[k], other[k]) for k in ("Step", "Temp", "PotEng", "Press", "c_e")))

        native_pair = ("pair_style      hybrid/overlay coul/long 6.0 buck 6.0\n"
                       "pair_coeff      * * coul/long\npair_modify     table 0\n")
        ewald_kspace = "ewald 1e-8\nkspace_modify gewald 0.45 kmax/ewald 7 7 7"
        pppm_kspace = "pppm 1e-8\nkspace_modify gewald 0.45 mesh 24 24 24 order 4"

        def native(example, kspace):
            """The example's thermo with LAMMPS' coul/long and `kspace` in place of the model."""
            model_lines = re.search(r"pair_style      hybrid/overlay nvalchemi .*\npair_coeff      \* \* nvalchemi Na Cl\n",
                                    example.source).group(0)
            text = example.variant(model_lines, native_pair + f"kspace_style    {kspace}\n")
            text = re.sub(r"compute         (q|qsum|ek) .*\n", "", text)
            text = text.replace(" c_ek c_qsum", " elong").replace(" c_ek", " elong")
            return thermo(example.run(f"{example.name}_{kspace.split()[0]}", text))

        ewald = Example(args, workdir, "ewald")
        model, lammps = thermo(ewald.run("ewald")), native(ewald, ewald_kspace)
        # (coul/long's polynomial erfc moves the pressure by 3e-6)
        check("ewald", "the thermo equals LAMMPS' coul/long + ewald to 1e-6 (pressure 1e-5)",
              all(close(model[k], lammps[k], 1e-6) for k in ("Step", "Temp", "PotEng", "TotEng"))
              and close(model["Press"], lammps["Press"], 1e-5))
        check("ewald", "c_ek is LAMMPS' elong", close(model["c_ek"], lammps["E_long"]))
        check("ewald", "the charges sum to zero", np.all(np.abs(model["c_qsum"]) < 1e-8))

        pme = Example(args, workdir, "pme")
        model, pppm, exact = thermo(pme.run("pme")), native(pme, pppm_kspace), native(pme, ewald_kspace)
        first = lambda table, key: table[key][:1]  # noqa: E731  (trajectories part with the forces)
        check("pme", "at step 0 energy and elong equal LAMMPS' pppm to 2e-4",
              close(first(model, "PotEng"), first(pppm, "PotEng"), 2e-4)
              and close(first(model, "c_ek"), first(pppm, "E_long"), 2e-4))
        check("pme", "at step 0 energy and pressure equal the Ewald sum to 1e-4, the pressure closer than pppm's",
              close(first(model, "PotEng"), first(exact, "PotEng"), 1e-4)
              and close(first(model, "Press"), first(exact, "Press"), 1e-4)
              and abs(model["Press"][0] - exact["Press"][0]) < abs(pppm["Press"][0] - exact["Press"][0]))

        dftd3 = Example(args, workdir, "dftd3")
        d3 = thermo(dftd3.run("dftd3"))
        check("dftd3", "c_mlip + c_d3 = pe", close(d3["c_mlip"] + d3["c_d3"], d3["PotEng"]))

        gp = Example(args, workdir, "gp")
        out = gp.run("gp")
        layerwise = thermo(gp.run("gp_layerwise", gp.variant(" spec SPEC_MPNN_GP", "")))
        check("gp", "halo gp gives the thermo of halo layerwise",
              all(close(v, layerwise[k]) for k, v in thermo(out).items()))
        check("gp", "halo gp reports its static shapes", "pair_style nvalchemi: static shapes:" in out)

        dd = Example(args, workdir, "dd")
        out = dd.run("dd")
        t = thermo(out)
        steps = [int(s) for s in re.findall(r"validate step (\d+): largest differences", out)]
        check("dd", f"validation on steps 0, 50, 100 (found {steps})", steps == [0, 50, 100])
        columns = [f"f_dd[{k}]" for k in (1, 2, 4, 5, 6, 7, 8, 9, 10)]
        check("dd", "thermo has the statistics, timings included", all(c in t for c in columns))
        check("dd", "the timings are measured (model seconds > 0)", np.all(t["f_dd[8]"] > 0))
        distance = np.abs(t["c_centre[1]"] - 6.9)
        check("dd", f"the centre moves towards 6.9 ({distance[0]:.4f} -> {distance[-1]:.4f})", distance[-1] < distance[0])
        plain = thermo(dd.run("dd_no_energy", dd.variant("fix_modify      dd energy yes", "fix_modify      dd energy no")))
        # thermo prints 6 significant digits here (thermo_modify format float %.6g)
        added = t["PotEng"][0] - plain["PotEng"][0]
        check("dd", f"the umbrella's energy enters pe ({added:.6g} = f_dd {t['f_dd'][0]:.6g})",
              t["f_dd"][0] > 0 and abs(added - t["f_dd"][0]) <= 2e-6 * abs(t["PotEng"][0]))

        committee = Example(args, workdir, "committee")
        t = thermo(committee.run("committee"))
        table = np.loadtxt(os.path.join(committee.dir, "model_devi.out"), ndmin=2)
        check("committee", "model_devi.out has a row per 10 steps, its max_devi_f that of the thermo",
              list(table[:, 0]) == list(t["Step"]) and close(table[:, 4], t["c_dev[4]"], 1e-6))
        written = [int(w) for w in re.findall(r"timestep=(\d+)", open(os.path.join(committee.dir, "candidates.xyz")).read())]
        above = [int(step) for step, devi in zip(t["Step"], t["c_dev[4]"]) if devi > 6.0]
        check("committee", f"candidates.xyz holds the frames with max_devi_f > 6 ({written})",
              0 < len(written) < len(t["Step"]) and written == above)

        npt = Example(args, workdir, "npt")
        continued = thermo(npt.run("npt"))
        straight = thermo(npt.run("npt_straight", npt.source[:npt.source.index("run             50\nwrite_restart")]
                                  + "run             100\n"))
        rows = [list(straight["Step"]).index(step) for step in continued["Step"]]
        check("npt", f"the run continued from restart.npt prints the uninterrupted run's thermo "
              f"(steps {continued['Step']})",
              len(rows) == 6 and all(close(continued[k], straight[k][rows]) for k in continued))
        dumps = sorted(int(f.rsplit(".", 1)[1]) for f in glob.glob(os.path.join(npt.dir, "dump.npt.*")))
        check("npt", f"dumps every 25 steps ({dumps})", dumps == [0, 25, 50, 75, 100])
        check("npt", "the barostat shrinks the box", continued["Volume"][-1] < straight["Volume"][0])

        # the logs committed beside each example (log.<date>.<name>[.kk].g++.<ranks>) are of its
        # input as it is and print the effective spec this build prints
        for example in (lj, spec, mp, mace, longrange, ewald, pme, dftd3, gp, dd, committee, npt):
            logs = sorted(glob.glob(os.path.join(args.repo, "examples", example.name, "log.*")))
            check(example.name, f"has committed logs ({len(logs)})", len(logs) > 0)
            for log in logs:
                text = open(log).read()
                echoed = set(line.rstrip() for line in text.splitlines())
                stale = [line for line in echoed_lines(example.source) if line not in echoed]
                check(example.name, f"{os.path.basename(log)} echoes the input as it is"
                      + (f" (not: {stale[0]!r})" if stale else ""), not stale)
                check(example.name, f"{os.path.basename(log)} prints the effective spec this build prints",
                      effective_specs(text) == effective_specs(example.output))

        # every example's input under the KOKKOS package (pair_style nvalchemi/kk), the same but for
        # its last run cut to KOKKOS_STEPS (the kokkos.* tests follow /kk over longer runs)
        for example in (lj, spec, mp, mace, longrange, ewald, pme, dftd3, gp, dd, committee, npt):
            runs = list(re.finditer(r"^run(\s+)\d+", example.source, re.MULTILINE))
            text = (example.source[:runs[-1].start()] + f"run{runs[-1].group(1)}{KOKKOS_STEPS}" +
                    example.source[runs[-1].end():])
            out = example.run(f"{example.name}_kk", text, lmp_args=kokkos_switches(2))
            plain, kk = thermo(example.output), thermo(out)
            rows = len(kk["Step"])
            # (fix nvalchemi/dd's statistics hold wall times and rounding noise)
            columns = [k for k in plain if not k.startswith("f_dd[")]
            check(example.name, f"-k on t 2 -sf kk runs pair_style nvalchemi/kk and prints the same thermo "
                  f"(steps {kk['Step']})",
                  ran_nvalchemi_kk(out) and rows == KOKKOS_STEPS // 10 + 1
                  and all(close(kk[k], plain[k][:rows]) for k in columns))
    checks.exit_on_failure()


if __name__ == "__main__":
    main()
