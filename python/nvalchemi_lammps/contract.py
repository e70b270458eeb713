"""The names the model contract fixes (doc/Howto_nvalchemi_contract.rst), which the export
writes and the checker reads."""

CONTRACT_VERSION = 1
METADATA_FILE = "nvalchemi_metadata.json"
# the AOTInductor package's metadata entry naming the energy output (its outputs are positional)
AOTI_ENERGY_OUTPUT = "nvalchemi_energy_output"
# the entry saying how the program takes n_owned: AOTI_OWNED_ROWS_AS_SIZE, a tensor of n_owned rows
# (the owned atoms' atomic numbers: the count is a size of the program, values unused), or absent
# for the contract's scalar (packages written before)
AOTI_OWNED_ROWS = "nvalchemi_owned_rows"
AOTI_OWNED_ROWS_AS_SIZE = "size"
# the contract's inputs, in the positional order of an AOTInductor model
CONTRACT_INPUTS = ("positions", "atomic_numbers", "neighbor_list", "edge_vectors", "cell", "pbc",
                   "n_owned")
