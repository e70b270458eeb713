"""The names the model contract fixes (doc/Howto_nvalchemi_contract.rst), which the export
writes and the checker reads."""

CONTRACT_VERSION = 1
METADATA_FILE = "nvalchemi_metadata.json"
# the AOTInductor package's metadata entry naming the energy output (its outputs are positional)
AOTI_ENERGY_OUTPUT = "nvalchemi_energy_output"
# the contract's inputs, in the positional order of an AOTInductor model
CONTRACT_INPUTS = ("positions", "atomic_numbers", "neighbor_list", "edge_vectors", "cell", "pbc",
                   "n_owned")
