"""The tables the C++ core defines once as JSON in a header (nvalchemi_spec_tables.h,
nvalchemi_contract_tables.h), which this package ships beside its modules and reads between
the header's R"json( and )json" markers."""

import json
import os
import re
from typing import Dict


def read_table(header: str, variable: str) -> Dict:
    """The JSON of `variable` (... = R"json( ... )json") in the shipped header `header`."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), header)
    with open(path) as f:
        text = f.read()
    found = re.search(variable + r' = R"json\((.*?)\)json"', text, re.DOTALL)
    if found is None:
        raise RuntimeError(f"{path} holds no {variable} = R\"json( ... )json\" table")
    return json.loads(found.group(1))
