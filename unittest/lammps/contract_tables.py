"""nvalchemi-check's metadata reader (nvalchemi_lammps.contract.check_metadata, which reads
src/USER-NVALCHEMI/nvalchemi_contract_tables.h) accepts and refuses the cases of
unittest/core/metadata_cases.json as pair_style nvalchemi's reader does (the gtest
Metadata.SharedCasesAsTheCheckerJudgesThem runs the same cases), with the same words; the
exporters write the specs of its exporter_specs as the readers of other frameworks' files give
them (the gtest Metadata.ExporterSpecsAsThePythonExportersWriteThem); and
nvalchemi_lammps.ops registers the exchange ops with the table's schemas, as the C++ core does
(the gtest ExchangeOps.RegisteredWithTheContractTablesSchemas).

    python contract_tables.py unittest/core/metadata_cases.json
"""

import copy
import json
import sys

import torch

import nvalchemi_lammps.ops  # noqa: F401  (registers torch.ops.nvalchemi)
from nvalchemi_lammps.contract import EXCHANGE_OPS, check_metadata
from nvalchemi_lammps.spec import exporter_spec


def main(path):
    with open(path) as f:
        corpus = json.load(f)
    failures = []
    for case in corpus["cases"]:
        if "text" in case:
            text = case["text"]
        else:
            meta = copy.deepcopy(corpus["base"])
            meta.update(case.get("set", {}))
            for key in case.get("drop", []):
                del meta[key]
            text = json.dumps(meta)
        try:
            check_metadata(text)
            refused = ""
        except ValueError as exc:
            refused = str(exc)
        ok = not refused if case["accepted"] else case["fragment"] in refused
        print(f"{'ok  ' if ok else 'FAIL'} {case['name']:35s} {refused or 'accepted'}")
        if not ok:
            failures.append(case["name"])
    for case in corpus["exporter_specs"]:
        written = exporter_spec(case["halo"], case["layers"], case["width"])
        ok = written == case["spec"]
        print(f"{'ok  ' if ok else 'FAIL'} exporter spec {case['halo']:9s} {case['layers']} layers  {written}")
        if not ok:
            failures.append(f"exporter spec {case['halo']} {case['layers']}")
    for schema in EXCHANGE_OPS:
        name = schema.split("(")[0]
        registered = str(getattr(torch.ops.nvalchemi, name).default._schema)
        ok = registered == "nvalchemi::" + schema
        print(f"{'ok  ' if ok else 'FAIL'} op {name:32s} {registered}")
        if not ok:
            failures.append(f"op {name}")
    if failures:
        sys.exit("FAIL: nvalchemi-check judges these unlike pair_style nvalchemi: " + ", ".join(failures))


if __name__ == "__main__":
    main(sys.argv[1])
