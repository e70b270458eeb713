"""Writes the toolkit's own MLIPSpec.to_dict() output (its version 2 layout) as JSON fixtures for
the unit tests of the version 2 reader (test_spec.cpp). Run once, with the nvalchemi toolkit
importable, in a virtual environment of its own (never the project's):

    python -m venv /tmp/nvt && /tmp/nvt/bin/pip install torch==2.13.0 nvalchemi-toolkit==0.2.0
    /tmp/nvt/bin/python unittest/core/toolkit_specs/make_fixtures.py unittest/core/toolkit_specs

The fixtures are committed, so the tests never need the toolkit. One file per preset, plus
specs a model wrapper derives from them with the toolkit's public API.
"""

import json
import os
import sys

import nvalchemi
from nvalchemi.distributed import spec as S
from nvalchemi.distributed._core.storage_policy import RefreshOnlyHaloPolicy
from nvalchemi.distributed.output_kinds import OutputKind, OutputSpec, Reduce

PRESETS = ["SPEC_LJ_HALO", "SPEC_MPNN_HALO", "SPEC_UMA_HALO", "SPEC_EWALD_HALO", "SPEC_PME_HALO",
           "SPEC_DFTD3_HALO", "SPEC_MPNN_GP"]


def derived():
    """Specs as the toolkit's wrappers build them from a preset."""
    uma = S.replace_policy(S.SPEC_UMA_HALO, scatter="local").with_outputs(
        {"stress": OutputSpec(OutputKind.PER_GRAPH, Reduce.ALL_REDUCE)})
    mace = S.SPEC_MPNN_HALO.with_compile(
        S.CompilePolicy(static_shapes=False, force_strategy=S.ForceStrategy.FRAMEWORK_FROM_NODE_ENERGY))
    ewald = S.SPEC_EWALD_HALO.with_outputs(
        {"charges": OutputSpec(OutputKind.PER_NODE, Reduce.OWNED_ONLY),
         "forces": OutputSpec(OutputKind.PER_NODE, Reduce.OWNED_ONLY)})
    refresh_only = S.MLIPSpec(distribution=S.DistributionSpec(policy=RefreshOnlyHaloPolicy()),
                              outputs={"energy": OutputSpec(OutputKind.PER_GRAPH),
                                       "forces": OutputSpec(OutputKind.PER_NODE)},
                              compile=S.CompilePolicy(force_strategy=S.ForceStrategy.MODEL_INTERNAL))
    local = S.replace_policy(S.SPEC_LJ_HALO, scatter="local", gather="local")
    return {"uma_scatter_local_stress_all_reduce": uma, "mpnn_compiled_node_energy": mace,
            "ewald_owned_only_forces": ewald, "refresh_only_model_internal": refresh_only,
            "lj_local_local": local}


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    specs = {name: getattr(S, name) for name in PRESETS}
    specs.update(derived())
    for name, spec in specs.items():
        with open(os.path.join(outdir, f"{name}.json"), "w") as f:
            json.dump(spec.to_dict(), f, indent=1, sort_keys=True)
            f.write("\n")
    print(f"wrote {len(specs)} specs from nvalchemi-toolkit {getattr(nvalchemi, '__version__', '?')}")


if __name__ == "__main__":
    main()
