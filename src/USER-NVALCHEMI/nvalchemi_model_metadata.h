/* -*- c++ -*- ----------------------------------------------------------
   USER-NVALCHEMI: a model file's metadata (contract version, cutoff, species,
   units, dtype, spec), checked when it is read, and the element table.
   See doc/Howto_nvalchemi_contract.rst. Plain C++17: no LAMMPS classes, no LibTorch.
------------------------------------------------------------------------- */

#ifndef LMP_NVALCHEMI_MODEL_METADATA_H
#define LMP_NVALCHEMI_MODEL_METADATA_H

#include "nvalchemi_contract_tables.h"
#include "nvalchemi_spec.h"

#include <string>
#include <vector>

namespace LAMMPS_NS {
namespace NVAlchemi {

  struct ModelMetadata {
    int contract_version = 0;
    double cutoff = 0.0;         // interaction cutoff, in the model's length unit
    std::vector<int> species;    // atomic numbers the model knows
    std::string units;           // LAMMPS unit style the model works in ("metal", ...)
    std::string dtype;           // "float64" or "float32"
    MLIPSpec spec;               // the model's default spec (a preset plus overrides)
    // the PyTorch that wrote the model ("2.13.0+cpu") and the CUDA it was built for ("13.0";
    // "" for a CPU build); both "" for a model written before exports recorded them
    std::string torch_version, cuda_version;
  };

  // Parses and checks the metadata JSON text; throws std::invalid_argument naming the offending
  // key on any missing, mistyped, unknown or out-of-range entry.
  ModelMetadata parse_metadata(const std::string &text);

  // Atomic number of a chemical symbol ("Ar" -> 18); 0 if the symbol is not an element.
  int atomic_number(const std::string &symbol);

  // Chemical symbol of an atomic number (18 -> "Ar"); "?" outside 1..118.
  std::string element_symbol(int z);

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS

#endif
